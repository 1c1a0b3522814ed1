package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/ethfab/ethfab/emulator/fabric"
)

// The test binary doubles as ethfab: with ETHFAB_TEST_STATE_ROOT set it
// runs its arguments as an ethfab command line against that state root
// and exits as ethfab would.
func TestMain(m *testing.M) {
	if root, ok := os.LookupEnv("ETHFAB_TEST_STATE_ROOT"); ok {
		fabric.StateRoot = root
		app := newApp()
		if err := app.Run(flagsFirst(app, os.Args)); err != nil {
			io.WriteString(os.Stderr, "ethfab: "+err.Error()+"\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// `ethfab version` and `ethfab --version` print the same line.
func TestVersionLine(t *testing.T) {
	var lines []string
	for _, args := range [][]string{{"ethfab", "version"}, {"ethfab", "--version"}, {"ethfab", "-v"}} {
		var out bytes.Buffer
		app := newApp()
		app.Writer = &out
		if err := app.Run(args); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		lines = append(lines, out.String())
	}
	want := "ethfab " + version + "\n"
	for i, l := range lines {
		if l != want {
			t.Errorf("output %d = %q, want %q", i, l, want)
		}
	}
}

type result struct {
	stdout, stderr string
	code           int
}

// ethfab runs the command line in a child process against root; cred, if
// not nil, runs it as another user.
func ethfab(t *testing.T, bin, root string, cred *syscall.Credential, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "ETHFAB_TEST_STATE_ROOT="+root)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

// stateRoot makes a state root holding one lab ("lab", with a namespace
// that does not exist) beside a directory that must survive, readable by
// every user.
func stateRoot(t *testing.T) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root, outside = filepath.Join(base, "ethfab"), filepath.Join(base, "victim")
	for _, d := range []string{filepath.Join(root, "lab"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	state := `{"lab": "lab", "state": "up", "namespaces": ["lab-h0", "lab-h1"]}`
	if err := os.WriteFile(filepath.Join(root, "lab", "lab.json"), []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	for d := base; d != filepath.Dir(d); d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o005 == 0 {
			os.Chmod(d, fi.Mode().Perm()|0o005)
		}
	}
	return root, outside
}

// Names that read as paths are refused before anything happens, naming the
// argument; the state root and what lies beside it survive.
func TestDownArguments(t *testing.T) {
	root, outside := stateRoot(t)
	bin := os.Args[0]
	for _, args := range [][]string{{"down", ""}, {"down", ".."}, {"down", "../.."}, {"down", "x/../lab"}, {"down", "lab", "../victim"},
		{"status", ".."}, {"exec", "..", "h0", "--", "true"}, {"ping", "../lab"}, {"run", "--lab", "..", "none.yaml"},
		{"down", strings.Repeat("a", 100<<10)}} { // an argument holds at most 128 KiB
		r := ethfab(t, bin, root, nil, args...)
		if r.code == 0 || !strings.Contains(r.stderr, "not a lab name") && !strings.Contains(r.stderr, "lab name is empty") {
			t.Errorf("ethfab %.40q: exit %d, %.300s", args, r.code, r.stderr)
		}
		if len(r.stderr) > 400 {
			t.Errorf("ethfab %.40q: %d bytes of error", args, len(r.stderr))
		}
		for _, p := range []string{filepath.Join(root, "lab", "lab.json"), outside} {
			if _, err := os.Stat(p); err != nil {
				t.Fatalf("ethfab %.40q removed %s", args, p)
			}
		}
	}
	if r := ethfab(t, bin, root, nil, "down", "lab", ".."); !strings.Contains(r.stderr, "LAB 2") {
		t.Errorf("the error does not name the argument: %s", r.stderr)
	}
	if r := ethfab(t, bin, root, nil, "run", "--lab", "..", "none.yaml"); !strings.Contains(r.stderr, "--lab") {
		t.Errorf("the error does not name the flag: %s", r.stderr)
	}
}

// `down` of a lab that does not exist says so and fails; `down --all`
// with no lab is fine.
func TestDownUnknownLab(t *testing.T) {
	root, _ := stateRoot(t)
	r := ethfab(t, os.Args[0], root, nil, "down", "nosuch")
	if r.code == 0 || !strings.Contains(r.stderr, "no such lab") {
		t.Errorf("down nosuch: exit %d, %s%s", r.code, r.stdout, r.stderr)
	}
	empty := t.TempDir()
	if r := ethfab(t, os.Args[0], empty, nil, "down", "--all"); r.code != 0 || !strings.Contains(r.stdout, "no labs") {
		t.Errorf("down --all without labs: exit %d, %s%s", r.code, r.stdout, r.stderr)
	}
}

// Without root, `down` says once that it needs root, instead of an EPERM
// per daemon and namespace, and leaves the lab's state alone.
func TestDownNeedsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a command as another user")
	}
	root, _ := stateRoot(t)
	// The test binary's own directory may be closed to other users.
	bin := filepath.Join(filepath.Dir(root), "ethfab.test")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	r := ethfab(t, bin, root, &syscall.Credential{Uid: 65534, Gid: 65534}, "down", "lab")
	if r.code == 0 || strings.Count(r.stderr, "needs root") != 1 || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("down as nobody: exit %d, %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(root, "lab", "lab.json")); err != nil {
		t.Errorf("down as nobody touched the lab: %v", err)
	}
}

// Integer flags out of range fail, naming the flag, before anything runs.
func TestFlagRanges(t *testing.T) {
	root, _ := stateRoot(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"up", "--instances", "-1", "none.yaml"}, "--instances: -1 is out of range 0..64"},
		{[]string{"up", "--instances", "65", "none.yaml"}, "--instances: 65 is out of range"},
		{[]string{"ping", "lab", "--sample", "0"}, "--sample: 0 is out of range"},
		{[]string{"ping", "lab", "--sample", "-5"}, "--sample: -5 is out of range"},
		{[]string{"plan", "--topology", "mesh:dims=3x3", "--routing", "vlan", "--link-off", "s0-0"}, `--link-off "s0-0": want A:B`},
	} {
		r := ethfab(t, os.Args[0], root, nil, c.args...)
		if r.code == 0 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("ethfab %q: exit %d, %s, want %q", c.args, r.code, r.stderr, c.want)
		}
	}
}

// ethfab link refuses a malformed command line before it touches a lab.
func TestLinkUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"link", "lab", "s0", "s1"}, "usage: ethfab link LAB A B off|on|rate RATE|avoid|use"},
		{[]string{"link", "lab", "s0", "s1", "rate"}, "usage"},
		{[]string{"link", "lab", "s0", "s1", "down"}, "usage"},
		{[]string{"link", "--hold", "1s", "lab", "s0", "s1", "off"}, "apply to on and rate"},
		{[]string{"link", "--order", "safe", "lab", "s0", "s1", "avoid"}, "--order applies to off and on"},
		{[]string{"link", "--profile", "PC5324", "--hold", "1s", "lab", "s0", "s1", "on"}, "give one"},
	} {
		app := newApp()
		app.Writer, app.ErrWriter = io.Discard, io.Discard
		err := app.Run(flagsFirst(app, append([]string{"ethfab"}, c.args...)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

func runApp(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	app := newApp()
	app.Writer, app.ErrWriter = &out, io.Discard
	// An exit status (cli.Exit) is returned, not passed to os.Exit.
	app.ExitErrHandler = func(*cli.Context, error) {}
	err := app.Run(flagsFirst(app, append([]string{"ethfab"}, args...)))
	return out.String(), err
}

// The shell completion scripts ask ethfab for the words, and ethfab
// answers with the labs in its state root (a lab's name after a command
// that takes one), wherever the request sits among the arguments; the
// version has a JSON form; the manual page renders.
func TestCompletionVersionMan(t *testing.T) {
	root := t.TempDir()
	old := fabric.StateRoot
	fabric.StateRoot = root
	t.Cleanup(func() { fabric.StateRoot = old })
	for _, l := range []string{"lab-a", "lab-b"} {
		if err := os.Mkdir(filepath.Join(root, l), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"status", "--generate-bash-completion"}, {"down", "lab-a", "--generate-bash-completion"}, {"capture", "--generate-bash-completion"}} {
		out, err := runApp(t, args...)
		if err != nil || out != "lab-a\nlab-b\n" {
			t.Errorf("%v: %q, %v; want the two labs", args, out, err)
		}
	}
	for shell, want := range map[string]string{"bash": "--generate-bash-completion", "zsh": "compdef _ethfab_complete ethfab", "fish": "complete -c ethfab"} {
		if out, err := runApp(t, "completion", shell); err != nil || !strings.Contains(out, want) {
			t.Errorf("completion %s: %v, %.200q", shell, err, out)
		}
	}
	if _, err := runApp(t, "completion", "csh"); err == nil || !strings.Contains(err.Error(), "bash, zsh or fish") {
		t.Errorf("completion csh: %v", err)
	}
	out, err := runApp(t, "version", "--json")
	var v versionInfo
	if err != nil || json.Unmarshal([]byte(out), &v) != nil || v.Version != version || !strings.HasPrefix(v.Go, "go") {
		t.Errorf("version --json: %q, %v", out, err)
	}
	if out, err := runApp(t, "man"); err != nil || !strings.Contains(out, ".TH ethfab") || !strings.Contains(out, "capture") {
		t.Errorf("man: %v, %.200q", err, out)
	}
}

// ethfab check compiles a scenario (each of its cases) and builds
// nothing; a bad field is reported with file, line and field.
func TestCheck(t *testing.T) {
	out, err := runApp(t, "check", "../../scenarios/qcn-df-un.yaml")
	if err != nil || strings.Count(out, ": ok: dragonfly:p=2,a=4,h=2") != 6 || !strings.Contains(out, "case base: ok:") {
		t.Errorf("check of a scenario with six cases: %v\n%s", err, out)
	}
	out, err = runApp(t, "check", "../../scenarios/quickstart.yaml", "--set", "routing.mode=valiant")
	if err != nil || !strings.HasPrefix(out, "ok: dragonfly:p=2,a=4,h=2,g=9, 72 hosts, 36 switches, routing valiant") {
		t.Errorf("check with --set: %v\n%s", err, out)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\nname: x\ntopology: {kind: dragonfly, p: 2, a: 4, h: 2}\nrouting: {mode: ugal}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runApp(t, "check", bad); err == nil || !strings.Contains(err.Error(), "bad.yaml:4:17: routing.mode") {
		t.Errorf("check of a bad field: %v", err)
	}
}

// --json on report, compare and down: one object a script reads.
func TestJSONOutputs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run1")
	if err := os.CopyFS(dir, os.DirFS("../../python/tests/fixtures/run1")); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Dir      string   `json:"dir"`
		Points   int      `json:"points"`
		Files    []string `json:"files"`
		Failed   []string `json:"failed"`
		Fidelity struct {
			OK bool `json:"ok"`
		} `json:"fidelity"`
	}
	out, err := runApp(t, "report", dir, "--json")
	if err != nil || json.Unmarshal([]byte(out), &rep) != nil || rep.Dir != dir || rep.Points != 2 || !rep.Fidelity.OK || rep.Failed == nil || len(rep.Files) < 5 {
		t.Errorf("report --json: %v %+v\n%.300s", err, rep, out)
	}
	var cmp struct {
		Series []string `json:"series"`
	}
	out, err = runApp(t, "compare", dir, "../../python/tests/fixtures/run1", "--out", filepath.Join(t.TempDir(), "cmp"), "--json")
	if err != nil || json.Unmarshal([]byte(out), &cmp) != nil || len(cmp.Series) != 2 {
		t.Errorf("compare --json: %v %+v\n%.300s", err, cmp, out)
	}
	old := fabric.StateRoot
	fabric.StateRoot = t.TempDir()
	t.Cleanup(func() { fabric.StateRoot = old })
	if out, err := runApp(t, "down", "--all", "--json"); err != nil || strings.Join(strings.Fields(out), "") != `{"removed":[],"errors":[]}` {
		t.Errorf("down --all --json with no labs: %v %q", err, out)
	}
}

// ETHFAB_STATE_DIR moves the labs' state; a relative path is refused.
func TestStateDirEnv(t *testing.T) {
	old := fabric.StateRoot
	t.Cleanup(func() { fabric.StateRoot = old })
	dir := t.TempDir()
	t.Setenv(StateDirEnv, dir+"/")
	if err := stateDirFromEnv(); err != nil || fabric.StateRoot != dir {
		t.Errorf("%s=%s: root %q, %v", StateDirEnv, dir, fabric.StateRoot, err)
	}
	t.Setenv(StateDirEnv, "labs")
	if err := stateDirFromEnv(); err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Errorf("a relative state directory: %v", err)
	}
}
