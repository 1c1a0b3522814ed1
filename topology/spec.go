// Package topology builds the fabrics of the papers as pure data: Dragonflies,
// Flattened Butterflies and folded-Clos networks (seed 000), and seed 002's
// meshes, tori, rings, M-trees, Myrinet-Clos and fat trees, of switches,
// hosts, ports and links, with deterministic names and port numbers. Nothing here touches the
// kernel, so a 300,000-host network can be built and inspected in memory.
package topology

import (
	"fmt"
	"slices"
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

// The testbed topologies of seed 002 (Table 11, Fig. 10, Figs 4/5): the
// networks switch-tagged VLAN routing runs on (grid.go, trees.go).
const (
	Mesh     Kind = "mesh"
	Torus    Kind = "torus"
	Ring     Kind = "ring"
	MTree    Kind = "mtree"
	MyriClos Kind = "myriclos"
	FatTree  Kind = "fattree"
)

// Seed 003's fabrics: extended generalized fat trees (xgft.go) and
// hand-drawn ones (custom.go), routed on shortest paths.
const (
	XGFT   Kind = "xgft"
	Custom Kind = "custom"
)

// Kinds are every topology family's name, in the order errors list them.
var Kinds = []string{string(Dragonfly), string(FlatFly), string(Clos), string(Mesh), string(Torus), string(Ring), string(MTree), string(MyriClos), string(FatTree), string(XGFT), string(Custom)}

// kinds lists every Kind, for errors.
var kinds = strings.Join(Kinds[:len(Kinds)-1], ", ") + " or " + Kinds[len(Kinds)-1]

// Grid reports the kinds whose switches sit at the points of a k1 x k2 x
// ... array (Dims, Coords): Flattened Butterflies, meshes, tori and
// M-trees.
func (k Kind) Grid() bool {
	return k == FlatFly || k == Mesh || k == Torus || k == MTree
}

// Testbed reports seed 002's testbed topologies (Table 11: meshes, tori,
// rings, M-trees, Myrinet-Clos, fat trees), which ethfab routes on
// shortest paths (controller/paths.go) rather than seed 000's schemes.
func (k Kind) Testbed() bool {
	switch k {
	case Mesh, Torus, Ring, MTree, MyriClos, FatTree:
		return true
	}
	return false
}

// PathRouted reports the kinds without groups that ethfab routes on
// shortest paths (controller/paths.go): seed 002's testbed topologies,
// XGFTs and custom fabrics. Addressing is flat or per switch.
func (k Kind) PathRouted() bool { return k.Testbed() || k == XGFT || k == Custom }

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

	// Mesh, torus and M-tree: Dims and T as a Flattened Butterfly's.
	// Torus and ring: Links parallel links between neighbours (1, or 2 for
	// seed 002 Table 3's tori, whose second link breaks the ring's cycle).
	// Ring and Myri-Clos: N switches (a Myri-Clos has N in each column).
	Links int
	N     int

	// Fat tree (seed 002 Table 3's (u,d,r), trees.go): R levels above the
	// leaves; U up ports on every switch below the top, D down ports on
	// every switch above the leaves; T hosts per leaf (default U).
	U, D, R int

	// XGFT(H; M; W) (xgft.go): H levels of switches (the field Dragonfly
	// uses for global links), M[i-1] children per level-i node, W[i-1]
	// parents per level-(i-1) node.
	M, W []int

	// Custom is a hand-drawn fabric (custom.go).
	Custom *CustomGraph
}

// ParamError names the parameter of a Spec that makes it impossible, and
// for a list parameter (a custom fabric's switches, links, hosts) the item.
type ParamError struct {
	Kind  Kind
	Param string
	Item  int // 1-based; 0: the parameter as a whole
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

// itemErr is a ParamError on item i (0-based) of a list parameter.
func itemErr(k Kind, p string, i int, format string, args ...any) error {
	return &ParamError{Kind: k, Param: p, Item: i + 1, Msg: fmt.Sprintf(format, args...)}
}

// ParseSpec reads `kind:key=value,...`, e.g. `dragonfly:p=4,a=8,h=4,g=33`,
// `flatfly:dims=4x4x4,t=4` or `clos:k=8`. The result is normalized and
// validated.
func ParseSpec(s string) (Spec, error) {
	kind, params, _ := strings.Cut(strings.TrimSpace(s), ":")
	sp := Spec{Kind: Kind(strings.ToLower(strings.TrimSpace(kind)))}
	if !slices.Contains(Kinds, string(sp.Kind)) {
		return Spec{}, fmt.Errorf("topology %q: unknown kind %q (want %s)", s, kind, kinds)
	}
	seen := map[string]bool{}
	var custom *CustomGraph
	hosts, hostOrder := map[string]int{}, []string(nil)
	if sp.Kind == Custom {
		custom = &CustomGraph{}
	}
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
		if custom != nil {
			if err := parseCustomParam(custom, hosts, &hostOrder, key, val); err != nil {
				return Spec{}, fmt.Errorf("topology %q: %w", s, err)
			}
			continue
		}
		if dst := sp.listParam(key); dst != nil {
			for _, d := range strings.Split(val, "x") {
				n, err := strconv.Atoi(d)
				if err != nil {
					return Spec{}, fmt.Errorf("topology %q: parameter %s: %q is not an integer", s, key, d)
				}
				*dst = append(*dst, n)
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
	if custom != nil {
		if err := custom.setHosts(hosts, hostOrder); err != nil {
			return Spec{}, fmt.Errorf("topology %q: %w", s, err)
		}
		sp.Custom = custom
	}
	sp = sp.Normalize()
	if err := sp.Validate(); err != nil {
		return Spec{}, err
	}
	return sp, nil
}

// ListParam is the field of a list parameter of s's Kind (dims; an
// XGFT's m and w), nil for any other name.
func (s *Spec) ListParam(key string) *[]int { return s.listParam(key) }

func (s *Spec) listParam(key string) *[]int {
	switch {
	case key == "dims" && s.Kind.Grid():
		return &s.Dims
	case key == "m" && s.Kind == XGFT:
		return &s.M
	case key == "w" && s.Kind == XGFT:
		return &s.W
	}
	return nil
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
	case Mesh, MTree:
		return []string{"dims", "t"}
	case Torus:
		return []string{"dims", "t", "links"}
	case Ring:
		return []string{"n", "t", "links"}
	case MyriClos:
		return []string{"n", "t"}
	case FatTree:
		return []string{"u", "d", "r", "t"}
	case XGFT:
		return []string{"h", "m", "w"}
	case Custom:
		return []string{"switches", "links", "hosts"}
	}
	return nil
}

// Param is the field of an integer parameter of s's Kind (one of
// ParamNames but dims), nil for any other name.
func (s *Spec) Param(key string) *int { return s.intParam(key) }

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
	case FlatFly, Mesh, MTree:
		if key == "t" {
			return &s.T
		}
	case Torus, Ring, MyriClos:
		switch key {
		case "t":
			return &s.T
		case "links":
			if s.Kind != MyriClos {
				return &s.Links
			}
		case "n":
			if s.Kind != Torus {
				return &s.N
			}
		}
	case FatTree:
		switch key {
		case "u":
			return &s.U
		case "d":
			return &s.D
		case "r":
			return &s.R
		case "t":
			return &s.T
		}
	case XGFT:
		if key == "h" {
			return &s.H
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
	case Mesh, Torus, MTree, Ring, MyriClos:
		s.Dims = append([]int(nil), s.Dims...)
		if s.T == 0 {
			s.T = 1
		}
		if s.Links == 0 && (s.Kind == Torus || s.Kind == Ring) {
			s.Links = 1
		}
	case FatTree:
		if s.T == 0 {
			s.T = s.U
		}
	case XGFT:
		s.M = append([]int(nil), s.M...)
		s.W = append([]int(nil), s.W...)
	case Custom:
		s.Custom = s.Custom.clone()
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
	case FlatFly, Mesh, Torus, MTree:
		if len(s.Dims) == 0 {
			return paramErr(s.Kind, "dims", "needs at least one dimension, e.g. dims=4x4")
		}
		n := int64(1)
		for i, k := range s.Dims {
			// A mesh of one switch is seed 002's ideal flat topology
			// (mesh:dims=1,t=16): one crossbar, no links.
			if k < 2 && !(s.Kind == Mesh && k == 1) {
				return paramErr(s.Kind, "dims", "dimension %d has size %d; each needs at least 2 switches", i+1, k)
			}
			n *= int64(k)
			if n > maxHosts {
				return paramErr(s.Kind, "dims", "%d switches is too many", n)
			}
		}
		if err := s.validateHosts(n); err != nil {
			return err
		}
		if s.Kind == Torus && s.Links != 1 && s.Links != 2 {
			return paramErr(s.Kind, "links", "must be 1 or 2 links between neighbours, got %d", s.Links)
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
	case Ring:
		if s.N < 2 || s.N > maxHosts {
			return paramErr(s.Kind, "n", "must be at least 2 switches, got %d", s.N)
		}
		if s.Links != 1 && s.Links != 2 {
			return paramErr(s.Kind, "links", "must be 1 or 2 links between neighbours, got %d", s.Links)
		}
		return s.validateHosts(int64(s.N))
	case MyriClos:
		if s.N < 1 || s.N > 4096 {
			return paramErr(s.Kind, "n", "must be 1 to 4096 switches per column, got %d", s.N)
		}
		return s.validateHosts(2 * int64(s.N))
	case FatTree:
		if s.U < 1 {
			return paramErr(s.Kind, "u", "must be at least 1 up port, got %d", s.U)
		}
		if s.D < s.U || s.D%s.U != 0 {
			return paramErr(s.Kind, "d", "must be a multiple of u = %d (a level's switches are grouped d/u groups at a time), got %d", s.U, s.D)
		}
		if s.R < 1 {
			return paramErr(s.Kind, "r", "must be at least 1 level above the leaves, got %d", s.R)
		}
		leaves := int64(s.D)
		for i := 1; i < s.R; i++ {
			leaves *= int64(s.D / s.U)
			if leaves > maxHosts {
				return paramErr(s.Kind, "r", "more than %d leaves", maxHosts)
			}
		}
		return s.validateHosts(leaves)
	case XGFT:
		return s.validateXGFT()
	case Custom:
		return s.validateCustom()
	default:
		return fmt.Errorf("topology: unknown kind %q (want %s)", s.Kind, kinds)
	}
	return nil
}

// validateHosts checks T for a fabric of n access switches.
func (s Spec) validateHosts(n int64) error {
	if s.T < 1 {
		return paramErr(s.Kind, "t", "must be at least 1 host per switch, got %d", s.T)
	}
	if n*int64(s.T) > maxHosts {
		return paramErr(s.Kind, "t", "%d hosts is too many", n*int64(s.T))
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
		parts = []string{"dims=" + dimsString(s.Dims), "t=" + strconv.Itoa(s.T)}
	case Clos:
		parts = []string{"k=" + strconv.Itoa(s.K), "levels=" + strconv.Itoa(s.Levels), "pods=" + strconv.Itoa(s.Pods)}
	case Mesh, MTree:
		parts = []string{"dims=" + dimsString(s.Dims), "t=" + strconv.Itoa(s.T)}
	case Torus:
		parts = []string{"dims=" + dimsString(s.Dims), "t=" + strconv.Itoa(s.T), "links=" + strconv.Itoa(s.Links)}
	case Ring:
		parts = []string{"n=" + strconv.Itoa(s.N), "t=" + strconv.Itoa(s.T), "links=" + strconv.Itoa(s.Links)}
	case MyriClos:
		parts = []string{"n=" + strconv.Itoa(s.N), "t=" + strconv.Itoa(s.T)}
	case FatTree:
		parts = []string{"u=" + strconv.Itoa(s.U), "d=" + strconv.Itoa(s.D), "r=" + strconv.Itoa(s.R), "t=" + strconv.Itoa(s.T)}
	case XGFT:
		parts = []string{"h=" + strconv.Itoa(s.H), "m=" + dimsString(s.M), "w=" + dimsString(s.W)}
	case Custom:
		if s.Custom != nil {
			parts = s.Custom.params()
		}
	}
	return string(s.Kind) + ":" + strings.Join(parts, ",")
}

func dimsString(dims []int) string {
	ds := make([]string, len(dims))
	for i, d := range dims {
		ds[i] = strconv.Itoa(d)
	}
	return strings.Join(ds, "x")
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
	case Mesh, Torus, MTree:
		// Every switch counted with a port per neighbour and lane, the
		// mesh's and M-tree's edges included: an upper bound.
		switches = 1
		for _, k := range s.Dims {
			switches *= k
		}
		return switches * s.T, switches, switches * (s.T + 2*len(s.Dims)*max(1, s.Links))
	case Ring:
		return s.N * s.T, s.N, s.N * (s.T + 2*s.Links)
	case MyriClos:
		return 2 * s.N * s.T, 2 * s.N, 2 * s.N * (s.T + s.N)
	case FatTree:
		if s.U < 1 || s.D < s.U || s.R < 1 {
			return 0, 0, 0
		}
		leaves, upper := s.D, 0
		for j := 1; j < s.R; j++ {
			leaves *= s.D / s.U
		}
		for j, n := 1, leaves; j <= s.R; j++ {
			n = n * s.U / s.D
			upper += n
		}
		return leaves * s.T, leaves + upper, leaves*(s.T+s.U) + upper*(s.D+s.U)
	case XGFT:
		if s.H < 1 || len(s.M) != s.H || len(s.W) != s.H {
			return 0, 0, 0
		}
		sizes := s.XGFTLevelSizes()
		for i := 1; i <= s.H; i++ {
			switches += sizes[i]
			up := 0
			if i < s.H {
				up = s.W[i]
			}
			ports += sizes[i] * (s.M[i-1] + up)
		}
		return sizes[0], switches, ports
	case Custom:
		if s.Custom == nil {
			return 0, 0, 0
		}
		hosts = s.Custom.NumHosts()
		return hosts, len(s.Custom.Switches), hosts + 2*len(s.Custom.Links)
	}
	return 0, 0, 0
}
