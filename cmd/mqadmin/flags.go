package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// flags are a subcommand's options as RocketMQ's commons-cli declares
// them: a short and a long name each (-t, --topic), a value unless it is a
// switch. Java's true|false options take a value (-o true), as in
// RocketMQ.
type flags struct {
	fs    *flag.FlagSet
	specs []flagSpec
	set   map[string]bool // by long (or short) name: given on the command line

	common struct {
		namesrv, timeout *string
		json, help       *bool
	} // every command's
}

type flagSpec struct {
	short, long, usage string
	isSwitch           bool
}

func newFlags(name string) *flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &flags{fs: fs, set: map[string]bool{}}
}

func (f *flags) add(short, long, usage string, isSwitch bool, v flag.Value) {
	f.specs = append(f.specs, flagSpec{short, long, usage, isSwitch})
	for _, n := range []string{short, long} {
		if n != "" {
			f.fs.Var(v, n, usage)
		}
	}
}

// str declares an option with a value.
func (f *flags) str(short, long, def, usage string) *string {
	p := new(string)
	*p = def
	f.add(short, long, usage, false, &stringValue{p: p, f: f, name: key(short, long)})
	return p
}

// sw declares a switch (no value).
func (f *flags) sw(short, long, usage string) *bool {
	p := new(bool)
	f.add(short, long, usage, true, &switchValue{p: p, f: f, name: key(short, long)})
	return p
}

func key(short, long string) string {
	if long != "" {
		return long
	}
	return short
}

// given reports whether the option named long (or short) was given.
func (f *flags) given(name string) bool { return f.set[name] }

func (f *flags) parse(args []string) error {
	if err := f.fs.Parse(args); err != nil {
		return err
	}
	if f.fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", f.fs.Arg(0))
	}
	return nil
}

func (f *flags) usage(w io.Writer, desc string) {
	fmt.Fprintf(w, "usage: mqadmin %s [options]\n%s\n\n", f.fs.Name(), desc)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range f.specs {
		var names []string
		if s.short != "" {
			names = append(names, "-"+s.short)
		}
		if s.long != "" {
			names = append(names, "--"+s.long)
		}
		arg := " <arg>"
		if s.isSwitch {
			arg = ""
		}
		fmt.Fprintf(tw, " %s%s\t%s\n", strings.Join(names, ","), arg, s.usage)
	}
	tw.Flush()
}

type stringValue struct {
	p    *string
	f    *flags
	name string
}

func (v *stringValue) String() string {
	if v == nil || v.p == nil {
		return ""
	}
	return *v.p
}

func (v *stringValue) Set(s string) error {
	*v.p = strings.TrimSpace(s)
	v.f.set[v.name] = true
	return nil
}

type switchValue struct {
	p    *bool
	f    *flags
	name string
}

func (v *switchValue) String() string {
	if v == nil || v.p == nil {
		return "false"
	}
	return strconv.FormatBool(*v.p)
}

func (v *switchValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*v.p = b
	v.f.set[v.name] = true
	return nil
}

func (v *switchValue) IsBoolFlag() bool { return true }

// Typed readers of option values, with the option named in errors.

func required(name, v string) error {
	if v == "" {
		return usagef("option --%s is required", name)
	}
	return nil
}

func parseInt(name, v string, def int64) (int64, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, usagef("option --%s: %q is not a number", name, v)
	}
	return n, nil
}

func parseBool(name, v string, def bool) (bool, error) {
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, usagef("option --%s: %q is not true or false", name, v)
	}
	return b, nil
}
