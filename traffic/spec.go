// Package traffic holds the synthetic traffic patterns of the papers as pure
// functions of a topology and a seed: who sends to whom, and when a host is
// silent. Nothing here touches the kernel; hostagent/traffic drives these
// patterns over raw Ethernet, and the wire format its frames carry is
// defined here (frame.go) so that anything that parses results or captures
// can decode them without the host agent.
package traffic

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Kind is a pattern family, named as in scenario files.
type Kind string

// The pattern families: the papers' uniform and adversarial (seed 000
// §V-D, seed 004 Fig. 3) and NPB-like bursts (seed 000 Table II), and the
// classic bit-reversal, transpose, permutation and all-to-all.
// Adversarial is written adv+N.
const (
	Uniform     Kind = "uniform"
	Adversarial Kind = "adv"
	BitReversal Kind = "bit-reversal"
	Transpose   Kind = "transpose"
	// TransposeKH is seed 002's matrix transpose (Fig. 10): host (x, y)
	// sends to (k-y-1, k-x-1), the anti-diagonal's hosts to (k-x-1, k-y-1).
	TransposeKH Kind = "transpose-kh"
	Permutation Kind = "permutation"
	AllToAll    Kind = "all-to-all"
	NPBLike     Kind = "npb-like"
	// Flows are explicit flows that start and stop at set times (seed
	// 002 Figs. 5 and 6): Spec.Flows.
	Flows Kind = "flows"
)

// Kinds lists the families in the order error messages name them.
var Kinds = []string{"uniform", "adv+N", "bit-reversal", "transpose", "transpose-kh", "permutation", "all-to-all", "npb-like", "flows"}

// Spec is a parsed pattern name.
type Spec struct {
	Kind Kind
	// Offset is N of adv+N (>= 1); 0 for the other kinds.
	Offset int
	// App is the NAS Parallel Benchmark an npb-like pattern mimics (CG, BT,
	// FT, IS, LU, MG, SP); "" mixes them.
	App string
	// Flows are a flows pattern's flows (given apart from its name).
	Flows []Flow
}

// Flow is one flow of a flows pattern: host Src sends to host Dst (host
// names) from From until To (0: the end), times since the traffic started.
// A host with several flows at once spreads its arrivals over them evenly
// at random; one with none is silent.
type Flow struct {
	Src, Dst string
	From, To time.Duration
}

var advRe = regexp.MustCompile(`^adv\+([0-9]+)$`)

// ParsePattern reads a pattern name: "uniform", "adv+1" (any N >= 1),
// "bit-reversal", "transpose", "permutation", "all-to-all", "npb-like", or
// "npb-like:CG" to pick the application (case-insensitive).
func ParsePattern(s string) (Spec, error) {
	switch Kind(s) {
	case Uniform, BitReversal, Transpose, TransposeKH, Permutation, AllToAll, NPBLike, Flows:
		return Spec{Kind: Kind(s)}, nil
	}
	if app, ok := strings.CutPrefix(s, string(NPBLike)+":"); ok {
		up := strings.ToUpper(app)
		if _, ok := IterationTime[up]; !ok {
			return Spec{}, fmt.Errorf("pattern %q: unknown NPB application %q (want one of %s)", s, app, strings.Join(NPBApps, ", "))
		}
		return Spec{Kind: NPBLike, App: up}, nil
	}
	if m := advRe.FindStringSubmatch(s); m != nil {
		n, err := strconv.Atoi(m[1])
		if err != nil || n < 1 {
			return Spec{}, fmt.Errorf("pattern %q: the offset N of adv+N must be at least 1", s)
		}
		return Spec{Kind: Adversarial, Offset: n}, nil
	}
	if strings.HasPrefix(s, "adv") {
		return Spec{}, fmt.Errorf("pattern %q: adversarial patterns are written adv+N with N >= 1, e.g. adv+1", s)
	}
	return Spec{}, fmt.Errorf("unknown traffic pattern %q (want one of %s)", s, strings.Join(Kinds, ", "))
}

// String renders the name ParsePattern reads back.
func (s Spec) String() string {
	switch {
	case s.Kind == Adversarial:
		return fmt.Sprintf("adv+%d", s.Offset)
	case s.Kind == NPBLike && s.App != "":
		return string(NPBLike) + ":" + s.App
	}
	return string(s.Kind)
}
