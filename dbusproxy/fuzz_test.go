package dbusproxy

import (
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/internal/dbuswire"
)

// fieldsOf lists a header's known fields, to encode it again.
func fieldsOf(h *header) []field {
	var fs []field
	add := func(code, typ byte, s string) {
		if s != "" {
			fs = append(fs, field{code: code, typ: typ, s: s})
		}
	}
	add(dbuswire.FieldPath, 'o', h.path)
	add(dbuswire.FieldInterface, 's', h.iface)
	add(dbuswire.FieldMember, 's', h.member)
	add(dbuswire.FieldErrorName, 's', h.errorName)
	add(dbuswire.FieldDestination, 's', h.dest)
	add(dbuswire.FieldSender, 's', h.sender)
	add(dbuswire.FieldSignature, 'g', h.sig)
	if h.replySerial != 0 {
		fs = append(fs, field{code: dbuswire.FieldReplySerial, typ: 'u', u: h.replySerial})
	}
	if h.unixFDs != 0 {
		fs = append(fs, field{code: dbuswire.FieldUnixFDs, typ: 'u', u: h.unixFDs})
	}
	return fs
}

// FuzzParse feeds any bytes to the message parser, and what it accepts to
// the rules: no panic; messageLen, from the first 16 bytes alone, agrees
// with the length of every message parseHeader accepts; an error is one
// line; an accepted message has a serial, its body inside it, and the
// fields its type requires, and its known fields encoded again parse
// back the same; the rules decide it with no panic whatever the policy, a
// refusal is one line naming the call with a way out, and with the opt-in
// no refusal is one the opt-in lifts.
func FuzzParse(f *testing.F) {
	seeds := [][]byte{
		callMsg(login1, "/org/freedesktop/login1", l1Mgr, "PowerOff", "b", false),
		callMsg(login1, "/org/freedesktop/login1/session/_32", "", "Terminate", ""),
		callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "StopUnit", "ss", "gdm.service", "replace"),
		callMsg(systemd, "/org/freedesktop/systemd1/unit/poweroff_2etarget", sdUnit, "Start", "s", "replace"),
		callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "EnqueueUnitJobMany", "asss", []any{"a.service", "b.service"}, "stop", "replace"),
		callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "StartTransientUnit", "ssa(sv)a(sa(sv))", "run-u1.scope", "fail",
			[]any{[]any{"PIDs", variant("au", []any{1, 2})}, []any{"PIDFDs", variant("ah", []any{0})}}, []any{}),
		callMsg(systemd, "/org/freedesktop/systemd1", sdMgr, "AttachProcessesToUnit", "ssau", "x.scope", "", []any{7}),
		callMsg("org.freedesktop.Notifications", "/org/freedesktop/Notifications", "org.freedesktop.Notifications", "Notify", "susssasa{sv}i", "a", 0, "", "b", "", []any{}, []any{[]any{"urgency", variant("y", 1)}}, 5000),
		encodeMessage(dbuswire.TypeMethodReturn, 1, 2, []field{{code: dbuswire.FieldReplySerial, typ: 'u', u: 1}, {code: dbuswire.FieldSender, typ: 's', s: "org.freedesktop.DBus"}, {code: dbuswire.FieldSignature, typ: 'g', s: "s"}}, encodeBody("s", ":1.5")),
		encodeMessage(dbuswire.TypeError, 1, 3, []field{{code: dbuswire.FieldReplySerial, typ: 'u', u: 1}, {code: dbuswire.FieldErrorName, typ: 's', s: errAccessDenied}}, nil),
		appendField(encodeMessage(dbuswire.TypeSignal, 0, 3, []field{{code: dbuswire.FieldPath, typ: 'o', s: "/a"}, {code: dbuswire.FieldInterface, typ: 's', s: "a.b"}, {code: dbuswire.FieldMember, typ: 's', s: "C"}}, nil), 12, "a{sv}", []any{[]any{"k", variant("v", variant("s", "x"))}}),
	}
	for _, s := range seeds {
		f.Add(s)
		f.Add(s[:len(s)/2])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := parseHeader(b)
		if err != nil {
			if s := err.Error(); strings.ContainsAny(s, "\r\n") || len(s) > 2048 {
				t.Fatalf("error of %d bytes, or not one line: %q", len(s), s)
			}
			return
		}
		if n, err := dbuswire.MessageLen(b[:dbuswire.FixedLen]); err != nil || n != len(b) {
			t.Fatalf("parseHeader accepted %d bytes, messageLen says %d, %v", len(b), n, err)
		}
		if h.serial == 0 || h.bodyOff > len(b) || h.bodyOff%8 != 0 {
			t.Fatalf("accepted header %+v of a %d-byte message", h, len(b))
		}
		if h.typ == dbuswire.TypeMethodCall && (h.path == "" || h.member == "") {
			t.Fatalf("a method call without a path or member: %+v", h)
		}
		if b[0] == 'l' {
			again, err := parseHeader(encodeMessage(h.typ, h.flags, h.serial, fieldsOf(&h), b[h.bodyOff:]))
			if err != nil {
				t.Fatalf("its fields encoded again: %v", err)
			}
			again.bodyOff, again.order = h.bodyOff, h.order
			if again != h {
				t.Fatalf("encoded again, %+v parses as %+v", h, again)
			}
		}
		all := func(string) bool { return true }
		for _, p := range []Policy{{}, {AllowPower: true}, {OwnsUnit: all, OwnsPID: func(int) bool { return true }}, {NoOptIn: true}} {
			d := newDecider("session", p)
			d.learn(&h, b, 1)
			r := d.decide(&h, b, nil)
			if r == nil {
				continue
			}
			if !strings.HasPrefix(r.Message, "paddock refused "+r.Interface+"."+r.Member) || !strings.Contains(r.Message, "Way out: ") || strings.ContainsAny(r.Message, "\r\n") {
				t.Fatalf("refusal message %q", r.Message)
			}
			if p.AllowPower && (r.Rule == RulePowerControl || r.Rule == RuleSessionControl || r.Rule == RuleIsolate) {
				t.Fatalf("with the opt-in, refused under %s: %s", r.Rule, r.Message)
			}
		}
	})
}
