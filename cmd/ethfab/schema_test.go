package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ethfab/ethfab/scenario"
)

// ethfab schema prints the embedded schema, or writes it with --output.
func TestSchemaCommand(t *testing.T) {
	out, err := runApp(t, "schema")
	if err != nil || out != string(scenario.Schema()) {
		t.Fatalf("schema: %v, %d bytes, want the %d of scenario.Schema()", err, len(out), len(scenario.Schema()))
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("schema: not a draft 2020-12 JSON Schema (%v): %.200s", err, out)
	}
	p := filepath.Join(t.TempDir(), "s.json")
	if out, err := runApp(t, "schema", "-o", p); err != nil || out != "" {
		t.Fatalf("schema -o: %v, %q", err, out)
	}
	if b, err := os.ReadFile(p); err != nil || !bytes.Equal(b, scenario.Schema()) {
		t.Errorf("schema -o wrote %d bytes (%v), want scenario.Schema()", len(b), err)
	}
	if _, err := runApp(t, "schema", "extra"); err == nil {
		t.Errorf("schema with an argument: no error")
	}
}
