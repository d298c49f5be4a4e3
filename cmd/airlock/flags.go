package main

import (
	"strconv"

	"github.com/spf13/pflag"

	"github.com/airlock-mirror/airlock/location"
)

// Flags that fill an option differently from how they are written.

// tlsVerifyFlag adds a --*-tls-verify flag (default true, as users know it)
// that sets insecure, an option whose zero value verifies, to its negation.
func tlsVerifyFlag(f *pflag.FlagSet, insecure *bool, name, usage string) {
	*insecure = false
	f.Var(verifyValue{insecure}, name, usage)
	f.Lookup(name).NoOptDefVal = "true"
}

// verifyValue is a boolean flag holding the negation of *insecure.
type verifyValue struct{ insecure *bool }

func (v verifyValue) String() string {
	if v.insecure == nil {
		return "true"
	}
	return strconv.FormatBool(!*v.insecure)
}

func (v verifyValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*v.insecure = !b
	return nil
}

func (verifyValue) Type() string     { return "bool" }
func (verifyValue) IsBoolFlag() bool { return true }

// dirFlag parses the folder s given to flag (file://DIR or DIR) into *l; ""
// leaves the zero Location (not given).
func dirFlag(l *location.Location, flag, s string) error {
	if s == "" {
		*l = location.Location{}
		return nil
	}
	v, err := location.ParseDir(flag, s)
	*l = v
	return err
}
