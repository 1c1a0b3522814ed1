package scenario

import _ "embed"

// schema is scenario/schema.json, a JSON Schema (draft 2020-12) of the
// scenario format: every field the decoder accepts, with its type,
// values and default. It is embedded so the binary carries the schema of
// the format it reads: `ethfab schema` prints it, and editors validate
// and complete scenario files with it (the shipped scenarios name it in
// a yaml-language-server comment on their first line). TestSchema* keep
// it and the decoder in step.
//
//go:embed schema.json
var schema []byte

// Schema returns the scenario format's JSON Schema (a copy).
func Schema() []byte { return append([]byte(nil), schema...) }
