package datapath

import (
	"testing"

	"github.com/ethfab/ethfab/internal/bpftest"
)

func TestObjectIsBuiltFromSource(t *testing.T) {
	bpftest.ObjectIsBuiltFrom(t, "emulator/datapath/bpf/switch.c", object)
}
