package scenario

import (
	"fmt"
	"strings"
)

// Error is one problem in a scenario, located at the line and column of
// the offending key or value so an editor can jump to it. Path names the
// field in the document, e.g. "phases[2].traffic.pattern".
type Error struct {
	File string // as given to Parse or Load
	Line int    // 1-based; 0 only for errors that came from an override
	Col  int    // 1-based
	// Override is the "PATH=VALUE" of the --set that introduced the
	// offending value; such values have no line in any file.
	Override string
	Path     string
	Msg      string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Override != "" {
		fmt.Fprintf(&b, "--set %s: ", clip(e.Override))
	} else {
		fmt.Fprintf(&b, "%s:%d:%d: ", e.File, e.Line, e.Col)
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// An error message repeats what the user wrote, which may be a megabyte of
// it: values longer than maxEcho bytes are cut to their first echoLen.
const (
	maxEcho = 256
	echoLen = 64
)

// clip cuts s for an error message, saying how long it was.
func clip(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	return fmt.Sprintf("%s... (%d bytes)", s[:echoLen], len(s))
}

// clipArgs cuts the string and error arguments of an error message
// (clip), so every message built from the user's values stays short.
func clipArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			a = clip(v)
		case error:
			a = clip(v.Error())
		}
		out[i] = a
	}
	return out
}

// Errors is every problem found in one pass over a scenario, in document
// order. Parse and Set return it (never empty) as their error.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As find the individual *Error values.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}
