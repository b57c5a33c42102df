package main

import (
	"encoding/xml"
	"testing"
)

// xmlSuites is the JUnit document as encoding/xml would write it: what
// junitXML, written by hand so that the binary does not link encoding/xml,
// must match byte for byte.
type xmlSuites struct {
	XMLName xml.Name   `xml:"testsuites"`
	Suites  []xmlSuite `xml:"testsuite"`
}

type xmlSuite struct {
	Name     string    `xml:"name,attr"`
	Tests    int       `xml:"tests,attr"`
	Failures int       `xml:"failures,attr"`
	Time     string    `xml:"time,attr"`
	Cases    []xmlCase `xml:"testcase"`
}

type xmlCase struct {
	Name      string      `xml:"name,attr"`
	ClassName string      `xml:"classname,attr"`
	Failure   *xmlFailure `xml:"failure,omitempty"`
}

type xmlFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// TestJunitXMLAsEncodingXML: junitXML writes what xml.MarshalIndent
// writes, for names and messages with markup, quotes, control characters,
// invalid UTF-8 and characters XML does not allow.
func TestJunitXMLAsEncodingXML(t *testing.T) {
	odd := "a<b>&\"c\"'d'\te\nf\rg\x00h\x1fi\xffj\uFFFD\uFFFEk😀l"
	for _, s := range []junitSuite{
		{Name: "paddock run true", Time: "0.001"},
		{Name: "paddock run true", Tests: 1, Time: "0.010", Cases: []junitCase{{Name: "no refusals", ClassName: "paddock"}}},
		{Name: "paddock run " + odd, Tests: 3, Failures: 2, Time: odd, Cases: []junitCase{
			{Name: "refused kill(SIGTERM) (" + odd + ")", ClassName: "paddock." + odd, Failure: &junitFailure{Message: odd, Type: odd, Text: odd}},
			{Name: "3 more refusals", ClassName: "paddock.more", Failure: &junitFailure{Message: "3 refusals", Type: "more"}},
			{Name: "", ClassName: ""},
		}},
	} {
		x := xmlSuite{Name: s.Name, Tests: s.Tests, Failures: s.Failures, Time: s.Time}
		for _, c := range s.Cases {
			xc := xmlCase{Name: c.Name, ClassName: c.ClassName}
			if f := c.Failure; f != nil {
				xc.Failure = &xmlFailure{Message: f.Message, Type: f.Type, Text: f.Text}
			}
			x.Cases = append(x.Cases, xc)
		}
		b, err := xml.MarshalIndent(xmlSuites{Suites: []xmlSuite{x}}, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		want := xml.Header + string(b)
		if got := string(junitXML(s)); got != want {
			t.Errorf("junitXML:\n%s\nwant (encoding/xml):\n%s", got, want)
		}
	}
}
