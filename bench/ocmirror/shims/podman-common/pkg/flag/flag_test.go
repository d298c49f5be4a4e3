package flag

import (
	"testing"

	"github.com/spf13/pflag"
)

func TestOptionalFlags(t *testing.T) {
	for _, tc := range []struct {
		args             []string
		boolSet, boolVal bool
		strSet           bool
		strVal           string
		intSet           bool
		intVal           int
	}{
		{args: nil},
		{args: []string{"--tls-verify"}, boolSet: true, boolVal: true},
		{args: []string{"--tls-verify=false", "--creds", "u:p", "--level", "9"}, boolSet: true, strSet: true, strVal: "u:p", intSet: true, intVal: 9},
		{args: []string{"--creds="}, strSet: true},
	} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		var b OptionalBool
		var s OptionalString
		var i OptionalInt
		OptionalBoolFlag(fs, &b, "tls-verify", "")
		fs.Var(NewOptionalStringValue(&s), "creds", "")
		fs.Var(NewOptionalIntValue(&i), "level", "")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if b.Present() != tc.boolSet || b.Value() != tc.boolVal || s.Present() != tc.strSet || s.Value() != tc.strVal || i.Present() != tc.intSet || i.Value() != tc.intVal {
			t.Errorf("%v: bool %v/%v string %v/%q int %v/%d", tc.args, b.Present(), b.Value(), s.Present(), s.Value(), i.Present(), i.Value())
		}
	}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	var i OptionalInt
	fs.Var(NewOptionalIntValue(&i), "level", "")
	if err := fs.Parse([]string{"--level", "x"}); err == nil {
		t.Error("--level x: no error")
	}
}
