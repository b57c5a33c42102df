package cmdline

import "strings"

// Opt is one parsed command-line option.
type Opt struct {
	Name     string // "-u" or "--user"
	Value    string // its value, attached or the next argument
	HasValue bool   // a value was given (an empty one too)
}

// OptSpec describes a program's options for ScanOpts: which take a value
// and how they may be placed. An option it does not name takes none.
type OptSpec struct {
	Short    string          // short options that take a value (attached or next argument)
	Optional string          // short options with an optional, attached-only value
	Long     map[string]bool // long options that take a value as the next argument when no '=' is given
	Plus     bool            // +o style options exist (shells)
	Permute  bool            // options may follow operands (GNU getopt without '+')
}

// Longs is the set of long option names (without "--") for OptSpec.Long.
func Longs(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// ScanOpts splits args into options and operands, the way the program
// spec describes parses them. Without Permute it stops at the first
// operand and returns the rest as operands; "--" ends the options. A word
// only known at run time is an operand.
func ScanOpts(args []Word, spec OptSpec) (opts []Opt, operands []Word) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		s := a.Value
		if a.Dynamic || len(s) < 2 || (s[0] != '-' && !(spec.Plus && s[0] == '+')) {
			if !spec.Permute {
				return opts, append(operands, args[i:]...)
			}
			operands = append(operands, a)
			continue
		}
		if s == "--" {
			return opts, append(operands, args[i+1:]...)
		}
		if strings.HasPrefix(s, "--") {
			name, val, eq := strings.Cut(s[2:], "=")
			o := Opt{Name: "--" + name, Value: val, HasValue: eq}
			if !eq && spec.Long[name] && i+1 < len(args) {
				o.Value, o.HasValue = args[i+1].Value, true
				i++
			}
			opts = append(opts, o)
			continue
		}
		prefix := s[:1]
		for j := 1; j < len(s); j++ {
			ch := s[j]
			name := prefix + string(ch)
			if strings.IndexByte(spec.Optional, ch) >= 0 {
				opts = append(opts, Opt{Name: name, Value: s[j+1:], HasValue: j+1 < len(s)})
				break
			}
			if strings.IndexByte(spec.Short, ch) >= 0 {
				o := Opt{Name: name, HasValue: true}
				if j+1 < len(s) {
					o.Value = s[j+1:]
				} else if i+1 < len(args) {
					o.Value = args[i+1].Value
					i++
				} else {
					o.HasValue = false
				}
				opts = append(opts, o)
				break
			}
			opts = append(opts, Opt{Name: name})
		}
	}
	return opts, operands
}

// Has reports whether opts hold any of the named options.
func Has(opts []Opt, names ...string) bool {
	for _, o := range opts {
		for _, n := range names {
			if o.Name == n {
				return true
			}
		}
	}
	return false
}

// Values are the values given to any of the named options, in order.
func Values(opts []Opt, names ...string) []string {
	var out []string
	for _, o := range opts {
		for _, n := range names {
			if o.Name == n && o.HasValue {
				out = append(out, o.Value)
			}
		}
	}
	return out
}
