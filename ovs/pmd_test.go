package ovs

import "testing"

func TestPMDOtherConfig(t *testing.T) {
	base := map[string]string{"n-handler-threads": "1"}
	m := PMDOtherConfig(base, 3)
	if m["pmd-cpu-mask"] != "0x7" || m["pmd-maxsleep"] != "10000" || m["n-handler-threads"] != "1" {
		t.Errorf("got %v", m)
	}
	if _, ok := base["pmd-cpu-mask"]; ok {
		t.Error("the base map was changed")
	}
	if m := PMDOtherConfig(nil, 0); m["n-revalidator-threads"] != DefaultOtherConfig["n-revalidator-threads"] || m["pmd-cpu-mask"] != "" {
		t.Errorf("nil base, no cores: got %v", m)
	}
}
