package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClassifyLicense: the licences of the modules paddock links are told
// by their text; anything else is not guessed.
func TestClassifyLicense(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"                                 Apache License\n                           Version 2.0, January 2004", "Apache-2.0"},
		{"MIT License\n\nCopyright (c) 2017 X\n\nPermission is hereby granted, free of charge, to any person obtaining a copy\nof this software", "MIT"},
		{"Copyright (c) 2016, Y.\n\nRedistribution and use in source and binary forms, with or without\n...\n   * Neither the name of Google Inc. nor", "BSD-3-Clause"},
		{"Copyright Z\n\nRedistribution and use in source and binary forms, with or without\nmodification, are permitted", "BSD-2-Clause"},
		{"GNU GENERAL PUBLIC LICENSE\nVersion 3", ""},
		{"", ""},
	} {
		if got := classifyLicense(tc.text); got != tc.want {
			t.Errorf("classifyLicense(%.40q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

// TestReadLicense: a module's licence file is found and read, its
// copyright lines taken from it, or from its sources' headers when it names
// nobody (an Apache licence); a module without one, or with a licence
// tools/release does not know, is an error naming it.
func TestReadLicense(t *testing.T) {
	mit := t.TempDir()
	write := func(dir, name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(mit, "LICENSE.txt", "Copyright (c) 2011 Keith\r\n\r\nPermission is hereby granted, free of charge, to any person obtaining a copy\r\nof this software\r\n")
	l, err := readLicense("example.com/mit", "v1.0.0", mit)
	if err != nil || l.spdx != "MIT" || strings.Join(l.copyright, "|") != "Copyright (c) 2011 Keith" || strings.Contains(l.text, "\r") {
		t.Errorf("MIT module: %+v, %v", l, err)
	}

	apache := t.TempDir()
	write(apache, "LICENSE", "Apache License\nVersion 2.0, January 2004\n")
	write(apache, "a.go", "// Copyright 2013-2023 The Cobra Authors\n//\n// Licensed under the Apache License\npackage a\n")
	write(apache, "b.go", "// Copyright 2013-2023 The Cobra Authors\npackage a\n")
	l, err = readLicense("example.com/apache", "v1.0.0", apache)
	if err != nil || l.spdx != "Apache-2.0" || strings.Join(l.copyright, "|") != "Copyright 2013-2023 The Cobra Authors" {
		t.Errorf("Apache module: %+v, %v", l, err)
	}

	none := t.TempDir()
	if _, err := readLicense("example.com/none", "v1.0.0", none); err == nil || !strings.Contains(err.Error(), "example.com/none v1.0.0 has no LICENSE") {
		t.Errorf("a module without a licence: %v", err)
	}
	gpl := t.TempDir()
	write(gpl, "COPYING", "GNU GENERAL PUBLIC LICENSE\n")
	if _, err := readLicense("example.com/gpl", "v1.0.0", gpl); err == nil || !strings.Contains(err.Error(), "is none tools/release knows") {
		t.Errorf("an unknown licence: %v", err)
	}
	two := t.TempDir()
	write(two, "LICENSE", "Apache License\nVersion 2.0\n")
	write(two, "COPYING", "Apache License\nVersion 2.0\n")
	if _, err := readLicense("example.com/two", "v1.0.0", two); err == nil || !strings.Contains(err.Error(), "two licence files") {
		t.Errorf("two licence files: %v", err)
	}
}

// TestCopyrightFile: Debian's machine-readable format: the header, paddock
// under Apache-2.0 for every file, a paragraph per linked module with its
// notice (an MIT or BSD text in full, an Apache one by reference to the
// standalone paragraph), and that paragraph last.
func TestCopyrightFile(t *testing.T) {
	got := string(copyrightFile("paddock developers <paddock@paddock.dev>", 2026, []linkedLicense{
		{module: "stdlib", version: "go1.26.8", spdx: "BSD-3-Clause", copyright: []string{"Copyright 2009 The Go Authors."}, text: "Copyright 2009 The Go Authors.\n\nRedistribution and use in source and binary forms"},
		{module: "github.com/spf13/cobra", version: "v1.10.2", spdx: "Apache-2.0", copyright: []string{"Copyright 2013-2023 The Cobra Authors"}, text: "Apache License"},
		{module: "github.com/rs/zerolog", version: "v1.35.1", spdx: "MIT", text: "Permission is hereby granted"},
	}))
	for _, want := range []string{
		"Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\nUpstream-Name: paddock\nUpstream-Contact: paddock developers <paddock@paddock.dev>\n",
		"\n\nFiles: *\nCopyright: 2026 paddock developers\nLicense: Apache-2.0\n\n",
		"\nFiles: go/src/*\nCopyright: Copyright 2009 The Go Authors.\nLicense: BSD-3-Clause\n Copyright 2009 The Go Authors.\n .\n Redistribution and use in source and binary forms\nComment: Linked into /usr/bin/paddock: the Go standard library, go1.26.8.\n",
		"\nFiles: github.com/spf13/cobra/*\nCopyright: Copyright 2013-2023 The Cobra Authors\nLicense: Apache-2.0\nComment: Linked into /usr/bin/paddock: github.com/spf13/cobra v1.10.2.\n",
		"\nFiles: github.com/rs/zerolog/*\nCopyright: the authors of github.com/rs/zerolog (its licence names no holder)\nLicense: Expat\n Permission is hereby granted\n",
		"\n\nLicense: Apache-2.0\n Licensed under the Apache License, Version 2.0",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("copyright lacks %q:\n%s", want, got)
		}
	}
	if !strings.HasSuffix(got, "\"/usr/share/common-licenses/Apache-2.0\".\n") {
		t.Errorf("copyright does not end with the standalone Apache-2.0 paragraph:\n%s", got)
	}
}
