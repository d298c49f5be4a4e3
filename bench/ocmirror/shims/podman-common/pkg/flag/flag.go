// Package flag stands in for go.podman.io/common/pkg/flag, which the Go
// module proxy does not serve, so that oc-mirror v2 can be built here for the
// benchmarks (bench/ocmirror/README.md). It is written for this repository and
// has the API oc-mirror uses: optional bool, string and int flag values that
// remember whether they were given.
package flag

import (
	"strconv"

	"github.com/spf13/pflag"
)

// OptionalBool is a bool that knows whether it was set.
type OptionalBool struct {
	present bool
	value   bool
}

// Present reports whether the flag was given.
func (ob *OptionalBool) Present() bool { return ob.present }

// Value is the flag's value (false when not given).
func (ob *OptionalBool) Value() bool { return ob.value }

type optionalBoolValue OptionalBool

func (v *optionalBoolValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	v.present, v.value = true, b
	return nil
}

func (v *optionalBoolValue) String() string {
	if !v.present {
		return ""
	}
	return strconv.FormatBool(v.value)
}

func (v *optionalBoolValue) Type() string { return "bool" }

// IsBoolFlag lets the flag be given without a value (--name means true).
func (v *optionalBoolValue) IsBoolFlag() bool { return true }

// OptionalBoolFlag defines a bool flag name on fs that writes into p; it
// may be given bare (--name) for true.
func OptionalBoolFlag(fs *pflag.FlagSet, p *OptionalBool, name, usage string) *pflag.Flag {
	f := fs.VarPF((*optionalBoolValue)(p), name, "", usage)
	f.NoOptDefVal = "true"
	f.DefValue = "false"
	return f
}

// OptionalString is a string that knows whether it was set.
type OptionalString struct {
	present bool
	value   string
}

// Present reports whether the flag was given.
func (os *OptionalString) Present() bool { return os.present }

// Value is the flag's value ("" when not given).
func (os *OptionalString) Value() string { return os.value }

type optionalStringValue OptionalString

// NewOptionalStringValue is a pflag.Value writing into p.
func NewOptionalStringValue(p *OptionalString) pflag.Value {
	p.present = false
	return (*optionalStringValue)(p)
}

func (v *optionalStringValue) Set(s string) error {
	v.present, v.value = true, s
	return nil
}

func (v *optionalStringValue) String() string { return v.value }

func (v *optionalStringValue) Type() string { return "string" }

// OptionalInt is an int that knows whether it was set.
type OptionalInt struct {
	present bool
	value   int
}

// Present reports whether the flag was given.
func (oi *OptionalInt) Present() bool { return oi.present }

// Value is the flag's value (0 when not given).
func (oi *OptionalInt) Value() int { return oi.value }

type optionalIntValue OptionalInt

// NewOptionalIntValue is a pflag.Value writing into p.
func NewOptionalIntValue(p *OptionalInt) pflag.Value {
	p.present = false
	return (*optionalIntValue)(p)
}

func (v *optionalIntValue) Set(s string) error {
	i, err := strconv.ParseInt(s, 0, strconv.IntSize)
	if err != nil {
		return err
	}
	v.present, v.value = true, int(i)
	return nil
}

func (v *optionalIntValue) String() string {
	if !v.present {
		return ""
	}
	return strconv.Itoa(v.value)
}

func (v *optionalIntValue) Type() string { return "int" }
