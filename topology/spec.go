// Package topology builds the fabrics of the papers as pure data: Dragonflies,
// Flattened Butterflies and folded-Clos networks of switches, hosts, ports and
// links, with deterministic names and port numbers. Nothing here touches the
// kernel, so a 300,000-host network can be built and inspected in memory.
package topology

import (
	"fmt"
	"strconv"
	"strings"
)

// Kind names a topology family.
type Kind string

// The topology families of seed 000 §III (Fig. 3).
const (
	Dragonfly Kind = "dragonfly"
	FlatFly   Kind = "flatfly"
	Clos      Kind = "clos"
)

// Spec is a topology's parameters, as written on the command line
// (`dragonfly:p=4,a=8,h=4`) or in a scenario file. Only the fields of its
// Kind are meaningful.
type Spec struct {
	Kind Kind

	// Dragonfly (Kim et al.): P hosts per switch, A switches per group,
	// H global links per switch, G groups (0 means the maximum, A*H+1).
	P int
	A int
	H int
	G int

	// Flattened Butterfly: switches arranged in a k1 x k2 x ... array,
	// all-to-all in each dimension, T hosts per switch.
	Dims []int
	T    int

	// Folded-Clos (fat tree) of K-port switches with Levels switch levels
	// (3 by default; 4 builds the paper's 300,000-host network) and Pods
	// two-level pods (0 means the full tree).
	K      int
	Levels int
	Pods   int
}

// ParamError names the parameter of a Spec that makes it impossible.
type ParamError struct {
	Kind  Kind
	Param string
	Msg   string
}

func (e *ParamError) Error() string {
	if e.Param == "" {
		return fmt.Sprintf("%s: %s", e.Kind, e.Msg)
	}
	return fmt.Sprintf("%s: parameter %s: %s", e.Kind, e.Param, e.Msg)
}

func paramErr(k Kind, p, format string, args ...any) error {
	return &ParamError{Kind: k, Param: p, Msg: fmt.Sprintf(format, args...)}
}

// ParseSpec reads `kind:key=value,...`, e.g. `dragonfly:p=4,a=8,h=4,g=33`,
// `flatfly:dims=4x4x4,t=4` or `clos:k=8`. The result is normalized and
// validated.
func ParseSpec(s string) (Spec, error) {
	kind, params, _ := strings.Cut(strings.TrimSpace(s), ":")
	sp := Spec{Kind: Kind(strings.ToLower(strings.TrimSpace(kind)))}
	switch sp.Kind {
	case Dragonfly, FlatFly, Clos:
	default:
		return Spec{}, fmt.Errorf("topology %q: unknown kind %q (want dragonfly, flatfly or clos)", s, kind)
	}
	seen := map[string]bool{}
	for _, kv := range strings.Split(params, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		key, val, ok := strings.Cut(kv, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		val = strings.TrimSpace(val)
		if !ok || val == "" {
			return Spec{}, fmt.Errorf("topology %q: %q is not key=value", s, kv)
		}
		if seen[key] {
			return Spec{}, fmt.Errorf("topology %q: parameter %s given twice", s, key)
		}
		seen[key] = true
		if key == "dims" && sp.Kind == FlatFly {
			for _, d := range strings.Split(val, "x") {
				n, err := strconv.Atoi(d)
				if err != nil {
					return Spec{}, fmt.Errorf("topology %q: parameter dims: %q is not an integer", s, d)
				}
				sp.Dims = append(sp.Dims, n)
			}
			continue
		}
		dst := sp.intParam(key)
		if dst == nil {
			return Spec{}, fmt.Errorf("topology %q: %s has no parameter %q (want %s)", s, sp.Kind, key, strings.Join(sp.ParamNames(), ", "))
		}
		n, err := strconv.Atoi(val)
		if err != nil {
			return Spec{}, fmt.Errorf("topology %q: parameter %s: %q is not an integer", s, key, val)
		}
		*dst = n
	}
	sp = sp.Normalize()
	if err := sp.Validate(); err != nil {
		return Spec{}, err
	}
	return sp, nil
}

// ParamNames lists the parameters a Kind accepts, in canonical order.
func (s Spec) ParamNames() []string {
	switch s.Kind {
	case Dragonfly:
		return []string{"p", "a", "h", "g"}
	case FlatFly:
		return []string{"dims", "t"}
	case Clos:
		return []string{"k", "levels", "pods"}
	}
	return nil
}

func (s *Spec) intParam(key string) *int {
	switch s.Kind {
	case Dragonfly:
		switch key {
		case "p":
			return &s.P
		case "a":
			return &s.A
		case "h":
			return &s.H
		case "g":
			return &s.G
		}
	case FlatFly:
		if key == "t" {
			return &s.T
		}
	case Clos:
		switch key {
		case "k":
			return &s.K
		case "levels":
			return &s.Levels
		case "pods":
			return &s.Pods
		}
	}
	return nil
}

// Normalize fills defaults: G = A*H+1, Levels = 3, Pods = the full tree.
func (s Spec) Normalize() Spec {
	switch s.Kind {
	case Dragonfly:
		if s.G == 0 {
			s.G = s.A*s.H + 1
		}
	case Clos:
		if s.Levels == 0 {
			s.Levels = 3
		}
		if s.Pods == 0 && s.K >= 4 && s.K%2 == 0 && (s.Levels == 3 || s.Levels == 4) {
			s.Pods = s.maxPods()
		}
	case FlatFly:
		s.Dims = append([]int(nil), s.Dims...)
	}
	return s
}

// maxPods is the number of pods of a full fat tree: K pods for 3 levels,
// K*(K/2) for 4.
func (s Spec) maxPods() int {
	if s.Levels == 4 {
		return s.K * (s.K / 2)
	}
	return s.K
}

// maxHosts bounds what Build will construct in memory (16.7M hosts, far
// beyond the paper's 300,000-host networks).
const maxHosts = 1 << 24

// Validate reports the first impossible parameter of a normalized Spec.
func (s Spec) Validate() error {
	switch s.Kind {
	case Dragonfly:
		if s.P < 1 {
			return paramErr(s.Kind, "p", "must be at least 1 host per switch, got %d", s.P)
		}
		if s.A < 1 {
			return paramErr(s.Kind, "a", "must be at least 1 switch per group, got %d", s.A)
		}
		if s.H < 1 {
			return paramErr(s.Kind, "h", "must be at least 1 global link per switch, got %d", s.H)
		}
		if s.A*s.H+1 > 1<<20 {
			return paramErr(s.Kind, "h", "a*h = %d global ports per group is beyond any buildable network", s.A*s.H)
		}
		if s.G < 2 || s.G > s.A*s.H+1 {
			return paramErr(s.Kind, "g", "must be between 2 and a*h+1 = %d (each group needs a global link to every other), got %d", s.A*s.H+1, s.G)
		}
		if int64(s.P)*int64(s.A)*int64(s.G) > maxHosts {
			return paramErr(s.Kind, "p", "p*a*g = %d hosts is too many", int64(s.P)*int64(s.A)*int64(s.G))
		}
	case FlatFly:
		if len(s.Dims) == 0 {
			return paramErr(s.Kind, "dims", "needs at least one dimension, e.g. dims=4x4")
		}
		n := int64(1)
		for i, k := range s.Dims {
			if k < 2 {
				return paramErr(s.Kind, "dims", "dimension %d has size %d; each needs at least 2 switches", i+1, k)
			}
			n *= int64(k)
			if n > maxHosts {
				return paramErr(s.Kind, "dims", "%d switches is too many", n)
			}
		}
		if s.T < 1 {
			return paramErr(s.Kind, "t", "must be at least 1 host per switch, got %d", s.T)
		}
		if n*int64(s.T) > maxHosts {
			return paramErr(s.Kind, "t", "%d hosts is too many", n*int64(s.T))
		}
	case Clos:
		if s.K < 4 || s.K%2 != 0 {
			return paramErr(s.Kind, "k", "switch port count must be even and at least 4, got %d", s.K)
		}
		if s.K > 1024 {
			return paramErr(s.Kind, "k", "switch port count %d is beyond any buildable network", s.K)
		}
		if s.Levels != 3 && s.Levels != 4 {
			return paramErr(s.Kind, "levels", "must be 3 or 4, got %d", s.Levels)
		}
		if s.Pods < 2 || s.Pods > s.maxPods() {
			return paramErr(s.Kind, "pods", "must be between 2 and %d for k=%d with %d levels, got %d", s.maxPods(), s.K, s.Levels, s.Pods)
		}
	default:
		return fmt.Errorf("topology: unknown kind %q (want dragonfly, flatfly or clos)", s.Kind)
	}
	return nil
}

// String renders the canonical command-line form; ParseSpec(s.String())
// gives s back.
func (s Spec) String() string {
	if s.Kind == "" {
		return ""
	}
	var parts []string
	switch s.Kind {
	case Dragonfly:
		parts = []string{"p=" + strconv.Itoa(s.P), "a=" + strconv.Itoa(s.A), "h=" + strconv.Itoa(s.H), "g=" + strconv.Itoa(s.G)}
	case FlatFly:
		ds := make([]string, len(s.Dims))
		for i, d := range s.Dims {
			ds[i] = strconv.Itoa(d)
		}
		parts = []string{"dims=" + strings.Join(ds, "x"), "t=" + strconv.Itoa(s.T)}
	case Clos:
		parts = []string{"k=" + strconv.Itoa(s.K), "levels=" + strconv.Itoa(s.Levels), "pods=" + strconv.Itoa(s.Pods)}
	}
	return string(s.Kind) + ":" + strings.Join(parts, ",")
}

// MarshalText writes the Spec as String does, so a Spec in JSON (a lab's
// state) reads as on the command line and round-trips.
func (s Spec) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads what MarshalText wrote (any form ParseSpec takes);
// empty is the zero Spec.
func (s *Spec) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*s = Spec{}
		return nil
	}
	sp, err := ParseSpec(string(b))
	if err != nil {
		return err
	}
	*s = sp
	return nil
}

// Size is the fabric's size computed from the parameters alone, without
// building it (so a size that would not fit in memory can be refused
// before it is built): hosts, switches and switch ports. A Dragonfly
// counts every global port, used or spare; a Clos is counted as a full
// fat tree of its hosts ((2L-1)/K switches per host), which the paper's
// own Clos count follows (29,484 switches for 303,264 hosts at K=72).
func (s Spec) Size() (hosts, switches, ports int) {
	s = s.Normalize()
	switch s.Kind {
	case Dragonfly:
		switches = s.G * s.A
		return switches * s.P, switches, switches * (s.P + s.A - 1 + s.H)
	case FlatFly:
		switches, radix := 1, s.T
		for _, k := range s.Dims {
			switches *= k
			radix += k - 1
		}
		return switches * s.T, switches, switches * radix
	case Clos:
		if s.K < 2 {
			return 0, 0, 0
		}
		half := s.K / 2
		hosts = s.Pods * half * half
		switches = (hosts*(2*s.Levels-1) + s.K - 1) / s.K
		return hosts, switches, switches * s.K
	}
	return 0, 0, 0
}
