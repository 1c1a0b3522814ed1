package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

func runPower(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	app := &cli.App{Name: "ethfab", Writer: &out, ErrWriter: &errOut, Commands: []*cli.Command{powerCommand()}}
	err := app.Run(append([]string{"ethfab", "power"}, args...))
	return out.String(), err
}

func TestPowerCommandTopology(t *testing.T) {
	dir := t.TempDir()
	consts := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(consts, []byte("pps_overhead: 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runPower(t, "--topology", "dragonfly:p=2,a=4,h=2", "--compact", "--json", "--constants", consts, "--out", dir)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Rows []struct {
			Organization string `json:"organization"`
		} `json:"rows"`
		Constants []struct {
			Name  string  `json:"name"`
			Value float64 `json:"value"`
		} `json:"constants"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if len(r.Rows) != 2 || r.Rows[0].Organization != "cam-flat" || r.Rows[1].Organization != "compact" {
		t.Errorf("rows %+v, want the reference and compact", r.Rows)
	}
	for _, c := range r.Constants {
		if c.Name == "pps_overhead" && c.Value != 0 {
			t.Errorf("pps_overhead %v, the file sets 0", c.Value)
		}
	}
	for _, f := range []string{"power.json", "summary.md", "fig11.png", "fig11.svg", "fig11.pdf"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestPowerCommandErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("cpu_w: 30\nbogus: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	curve := filepath.Join(dir, "t.csv")
	if err := os.WriteFile(curve, []byte("10,1\n5,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "give --paper, --topology SPEC or --lab"},
		{[]string{"--paper", "--topology", "clos:k=4"}, "give --paper, --topology SPEC or --lab"},
		{[]string{"--lab", "x"}, "--lab LAB --profile NAME go together"},
		{[]string{"--lab", "x", "--profile", "PC5324", "--paper"}, "--lab LAB --profile NAME go together"},
		{[]string{"--lab", "x", "--profile", "PC9999"}, "unknown switch profile"},
		{[]string{"--paper", "--compact"}, "go with --topology"},
		{[]string{"--topology", "clos:k=4", "--addressing", "bogus"}, "unknown organization"},
		{[]string{"--topology", "clos:k=4", "--compact", "--addressing", "flat"}, "--compact compacts per-group"},
		{[]string{"--topology", "clos:k=4", "--constants", bad}, bad + ":2:1: unknown constant"},
		{[]string{"--topology", "clos:k=4", "--tcam-model", curve}, curve + ":2: entries 5"},
	} {
		_, err := runPower(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
