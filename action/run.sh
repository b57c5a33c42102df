#!/usr/bin/env bash
# The paddock GitHub Action's run step (action.yml): runs the command under
# paddock run --strict with a report, writes a Markdown summary of what
# paddock refused to $GITHUB_STEP_SUMMARY (and an error annotation per
# refusal), sets the outputs exit-code, refusals, report and journal, and
# exits with paddock run's status: the command's own, or 1 under --strict
# when anything was refused and the command succeeded.
#
# Inputs, from the environment: PADDOCK_ACTION_BIN (the installed paddock),
# INPUT_COMMAND, INPUT_STRICT (true or false), INPUT_REPORT,
# INPUT_REPORT_FORMAT (junit or json), INPUT_JOURNAL.
set -uo pipefail

usage() {
  echo "::error title=paddock::$*"
  exit 2
}

bin=${PADDOCK_ACTION_BIN:-paddock}
command=${INPUT_COMMAND:-}
[[ -n ${command//[[:space:]]/} ]] || usage "command input is empty: give the command to run under paddock, as in a run step"
args=(run)
case ${INPUT_STRICT:-true} in
  true) args+=(--strict) ;;
  false) ;;
  *) usage "strict input \"$INPUT_STRICT\": want true or false" ;;
esac
format=${INPUT_REPORT_FORMAT:-junit}
case $format in
  junit) default_report=paddock-report.xml ;;
  json) default_report=paddock-report.json ;;
  *) usage "report-format input \"$format\": want junit or json" ;;
esac
report=${INPUT_REPORT:-$default_report}
journal=${INPUT_JOURNAL:-${RUNNER_TEMP:?RUNNER_TEMP is not set}/paddock-journal.jsonl}
# Both go into $GITHUB_OUTPUT as NAME=VALUE lines, where a line break would
# start an output of the input's choosing (a second exit-code=0, say).
for name in report journal; do
  [[ ${!name} != *[$'\n\r']* ]] || usage "$name input \"${!name//[$'\n\r']/\\n}\": contains a line break; want a file path on one line"
done
args+=(--report "$report" --report-format "$format" --journal "$journal")

# The command runs as a run step's script would: bash -eo pipefail.
rm -f -- "$report"
"$bin" "${args[@]}" -- bash --noprofile --norc -eo pipefail -c "$command"
status=$?

# Everything below comes from the report paddock wrote from its own
# in-memory summary once the command had exited, never from the journal,
# which the command could write while it ran.
#
# rows prints one line per entry of the report, KIND<TAB>MESSAGE: KIND is
# a refusal's rule, "adopted" or "opt_in_used" for what the command let
# itself do (paddock adopt, PADDOCK_ALLOW_*=1), or "more" and
# "more_permitted" for entries not listed one by one (the message begins
# with how many). Messages are as Markdown can show them (&, < and > stay
# entities).
rows() {
  if [[ $format == junit ]]; then
    # paddock writes one <failure message="..." type="KIND"> per line.
    sed -n 's/.*<failure message="\([^"]*\)" type="\([^"]*\)">.*/\2\t\1/p' "$report" |
      sed -e 's/&#34;/"/g' -e "s/&#39;/'/g" -e 's/&#x9;/ /g' -e 's/&#xA;/ /g' -e 's/&#xD;/ /g'
  else
    # paddock writes the report indented, one key per line; in each of
    # "items" "rule" comes before "message", in each of "permitted"
    # "action" does.
    {
      sed -n '/^  "items": \[/,/^  \]/p' "$report" |
        sed -n -e 's/^      "rule": "\(.*\)",\{0,1\}$/\1/p' -e 's/^      "message": "\(.*\)",\{0,1\}$/\t\1/p' | paste - -
      sed -n '/^  "permitted": \[/,/^  \]/p' "$report" |
        sed -n -e 's/^      "action": "\(.*\)",\{0,1\}$/\1/p' -e 's/^      "message": "\(.*\)",\{0,1\}$/\t\1/p' | paste - -
    } | sed -e 's/\t\t/\t/' -e 's/\\"/"/g' -e 's/\\u003c/\&lt;/g' -e 's/\\u003e/\&gt;/g' \
      -e 's/\\u0026/\&amp;/g' -e 's/\\[nrt]/ /g' -e 's/\\\\/\\/g'
    # Entries past those listed one by one.
    local total listed
    total=$(count refusals)
    listed=$(sed -n '/^  "items": \[/,/^  \]/p' "$report" | grep -c '^      "message": ')
    if ((total > listed)); then
      printf 'more\t%d refusals not listed one by one (see the journal)\n' $((total - listed))
    fi
    total=$(($(count adoptions) + $(count opt_ins)))
    listed=$(sed -n '/^  "permitted": \[/,/^  \]/p' "$report" | grep -c '^      "message": ')
    if ((total > listed)); then
      printf 'more_permitted\t%d adoptions and opt-ins not listed one by one (see the journal)\n' $((total - listed))
    fi
  fi
}

# count prints the JSON report's top-level number KEY (0 when absent).
count() {
  local n
  n=$(sed -n "s/^  \"$1\": \([0-9]*\),\{0,1\}\$/\1/p" "$report")
  echo "${n:-0}"
}

# plural prints "1 NOUN" or "N NOUNs" (NOUNS given).
plural() {
  if (($1 == 1)); then echo "1 $2"; else echo "$1 $3"; fi
}

quoted=$(printf '%s' "$command" | head -n 1)
[[ $command == *$'\n'* ]] && quoted+=" ..."
rows='' refusals=0 adoptions=0 optins=0 unlisted=0
if [[ -s $report ]]; then
  rows=$(rows)
  # A "more" row stands for as many entries as its message begins with.
  while IFS=$'\t' read -r kind message; do
    [[ -n $kind ]] || continue
    case $kind in
      adopted) adoptions=$((adoptions + 1)) ;;
      opt_in_used) optins=$((optins + 1)) ;;
      more_permitted) [[ ${message%% *} =~ ^[0-9]+$ ]] && unlisted=$((unlisted + ${message%% *})) ;;
      more) [[ ${message%% *} =~ ^[0-9]+$ ]] && refusals=$((refusals + ${message%% *})) ;;
      *) refusals=$((refusals + 1)) ;;
    esac
  done <<<"$rows"
fi
{
  if [[ ! -s $report ]]; then
    echo "### paddock: no report"
    echo
    echo "paddock run exited $status before writing its report (\`$report\`); its log says why."
  else
    heading="no refusals"
    ((refusals == 0)) || heading=$(plural "$refusals" refusal refusals)
    if ((adoptions + optins + unlisted > 0)); then
      heading+=", $(plural "$adoptions" adoption adoptions), $(plural "$optins" "opt-in honoured" "opt-ins honoured")"
      ((unlisted == 0)) || heading+=" (and $unlisted more adoptions or opt-ins)"
    fi
    echo "### paddock: $heading"
    echo
    echo "Ran \`${quoted//\`/\'}\` under \`paddock ${args[*]}\`, which exited $status."
    if ((adoptions + optins + unlisted > 0)); then
      echo
      echo "An adoption (\`paddock adopt\`) or an honoured opt-in (\`PADDOCK_ALLOW_...=1\`) is the command widening what it may do on its own say-so; under \`strict\` it fails the step as a refusal does."
    fi
    if [[ -n $rows ]]; then
      echo
      echo "| # | rule | entry |"
      echo "| --- | --- | --- |"
      i=0
      while IFS=$'\t' read -r kind message; do
        i=$((i + 1))
        echo "| $i | $kind | ${message//|/\\|} |"
      done <<<"$rows"
    fi
    echo
    echo "Report: \`$report\` ($format). Journal: \`$journal\` (read it with \`paddock journal --journal $journal\`)."
  fi
} >>"${GITHUB_STEP_SUMMARY:?GITHUB_STEP_SUMMARY is not set}"

# An annotation per entry, so that the run's page shows them too.
while IFS=$'\t' read -r kind message; do
  [[ -n $kind ]] || continue
  case $kind in
    adopted | opt_in_used | more_permitted) title="paddock allowed ($kind)" ;;
    *) title="paddock refused ($kind)" ;;
  esac
  echo "::error title=$title::${message//'%'/%25}"
done <<<"$rows"

# output writes NAME=VALUE to $GITHUB_OUTPUT; a value is one line (the
# inputs were checked above), never a second output.
output() {
  [[ $2 != *[$'\n\r']* ]] || usage "output $1: a value with a line break"
  echo "$1=$2" >>"${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set}"
}
output exit-code "$status"
output refusals "$refusals"
output adoptions "$adoptions"
output opt-ins "$optins"
output report "$report"
output journal "$journal"
exit "$status"
