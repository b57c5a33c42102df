package main

import (
	"fmt"
	"math"
	"strconv"
)

// gbFlag is a flag holding a size in GB: a finite number, 0 or more (NaN,
// Inf and words are refused with what is accepted, not strconv's text).
type gbFlag struct{ v *float64 }

// String implements pflag.Value.
func (g gbFlag) String() string {
	if g.v == nil {
		return "0"
	}
	return strconv.FormatFloat(*g.v, 'g', -1, 64)
}

// Set implements pflag.Value.
func (g gbFlag) Set(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return fmt.Errorf("want a size in GB: a number, 0 or more (16, 0.5); got %q", s)
	}
	*g.v = f
	return nil
}

// Type implements pflag.Value.
func (gbFlag) Type() string { return "GB" }
