// Package vswitchd holds libovsdb models generated from the Open vSwitch
// database schema (vswitch.ovsschema, copied from the Debian package so the
// models match the ovsdb-server we run). Regenerate after changing the schema.
package vswitchd

//go:generate go tool modelgen -p vswitchd -o . vswitch.ovsschema
