package scenario

import (
	"fmt"
	"regexp"
	"strconv"
)

var labNameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// MaxNameLen bounds the lab name. The name prefixes every namespace of the
// lab (<lab>-<host>, <lab>-fab<k>) and is a directory on the path of every
// Open vSwitch socket of the lab (/run/ethfab/<lab>/ovs/<k>/<bridge>.mgmt),
// which a unix socket address limits to 107 bytes.
const MaxNameLen = 12

// CheckLabName is the one rule for lab names, wherever they come from (a
// scenario's name:, --set name=, a command-line argument): lower-case
// letters, digits and -, starting with a letter or digit, at most
// MaxNameLen. The name becomes a directory under the state root that
// `down` removes, so anything that could be read as a path ("", "..",
// "a/b") must fail here.
func CheckLabName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("the lab name is empty")
	case !labNameRe.MatchString(name):
		return fmt.Errorf("%s is not a lab name (lower-case letters, digits and -, starting with a letter or digit)", Abbrev(name))
	case len(name) > MaxNameLen:
		return fmt.Errorf("%s is not a lab name: %d characters, at most %d (it prefixes namespace and socket names)", Abbrev(name), len(name), MaxNameLen)
	}
	return nil
}

// Abbrev quotes s for an error message, cut as clip cuts it.
func Abbrev(s string) string {
	if len(s) <= maxEcho {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:echoLen]) + fmt.Sprintf("... (%d bytes)", len(s))
}
