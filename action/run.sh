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
args+=(--report "$report" --report-format "$format" --journal "$journal")

# The command runs as a run step's script would: bash -eo pipefail.
rm -f -- "$report"
"$bin" "${args[@]}" -- bash --noprofile --norc -eo pipefail -c "$command"
status=$?

# refusals prints one line per refusal in the report, RULE<TAB>MESSAGE,
# with the message as Markdown can show it (&, < and > stay entities).
refusals() {
  if [[ $format == junit ]]; then
    # paddock writes one <failure message="..." type="RULE"> per line.
    sed -n 's/.*<failure message="\([^"]*\)" type="\([^"]*\)">.*/\2\t\1/p' "$report" |
      sed -e 's/&#34;/"/g' -e "s/&#39;/'/g" -e 's/&#x9;/ /g' -e 's/&#xA;/ /g' -e 's/&#xD;/ /g'
  else
    # paddock writes the report indented, one key per line; in each item
    # "rule" comes before "message".
    sed -n -e 's/^      "rule": "\(.*\)",\{0,1\}$/\1/p' -e 's/^      "message": "\(.*\)",\{0,1\}$/\t\1/p' "$report" |
      paste - - | sed -e 's/\t\t/\t/' -e 's/\\"/"/g' -e 's/\\u003c/\&lt;/g' -e 's/\\u003e/\&gt;/g' \
        -e 's/\\u0026/\&amp;/g' -e 's/\\[nrt]/ /g' -e 's/\\\\/\\/g'
    # Refusals past those listed one by one.
    local total listed
    total=$(sed -n 's/^  "refusals": \([0-9]*\),$/\1/p' "$report")
    listed=$(grep -c '^      "message": ' "$report")
    if ((${total:-0} > listed)); then
      printf 'more\t%d refusals not listed one by one (see the journal)\n' $((total - listed))
    fi
  fi
}

quoted=$(printf '%s' "$command" | head -n 1)
[[ $command == *$'\n'* ]] && quoted+=" ..."
rows='' n=0
if [[ -s $report ]]; then
  rows=$(refusals)
  # A "more" row stands for as many refusals as its message begins with.
  while IFS=$'\t' read -r rule message; do
    [[ -n $rule ]] || continue
    if [[ $rule == more && ${message%% *} =~ ^[0-9]+$ ]]; then
      n=$((n + ${message%% *}))
    else
      n=$((n + 1))
    fi
  done <<<"$rows"
fi
{
  if [[ ! -s $report ]]; then
    echo "### paddock: no report"
    echo
    echo "paddock run exited $status before writing its report (\`$report\`); its log says why."
  else
    case $n in
      0) echo "### paddock: no refusals" ;;
      1) echo "### paddock: 1 refusal" ;;
      *) echo "### paddock: $n refusals" ;;
    esac
    echo
    echo "Ran \`${quoted//\`/\'}\` under \`paddock ${args[*]}\`, which exited $status."
    if [[ -n $rows ]]; then
      echo
      echo "| # | rule | refusal |"
      echo "| --- | --- | --- |"
      i=0
      while IFS=$'\t' read -r rule message; do
        i=$((i + 1))
        echo "| $i | $rule | ${message//|/\\|} |"
      done <<<"$rows"
    fi
    echo
    echo "Report: \`$report\` ($format). Journal: \`$journal\` (read it with \`paddock journal --journal $journal\`)."
  fi
} >>"${GITHUB_STEP_SUMMARY:?GITHUB_STEP_SUMMARY is not set}"

# An annotation per refusal, so that the run's page shows them too.
while IFS=$'\t' read -r rule message; do
  [[ -n $rule ]] || continue
  echo "::error title=paddock refused ($rule)::${message//'%'/%25}"
done <<<"$rows"

{
  echo "exit-code=$status"
  echo "refusals=$n"
  echo "report=$report"
  echo "journal=$journal"
} >>"${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set}"
exit "$status"
