package omx

import (
	"testing"
	"time"

	"github.com/ethfab/ethfab/hostagent/ether"
)

func TestPeerTable(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tab := NewPeerTable(t0, 0)
	steps := []struct {
		mac    ether.MAC
		serial uint32
		want   Change
	}{
		{macA, 1, NewPeer},
		{macA, 1, Known},
		{macB, 1, NewPeer},
		{macA, 2, NewSerial},
		{macA, 2, Known},
	}
	for i, s := range steps {
		if got := tab.Observe(s.mac, s.mac, s.serial, 0, t0.Add(time.Duration(i)*time.Second)); got != s.want {
			t.Fatalf("step %d: %v, want %v", i, got, s.want)
		}
	}
	if tab.Len() != 2 || !tab.Has(macA) || !tab.Has(macB) || tab.Has(ether.MAC{2}) {
		t.Fatalf("table %+v", tab.Peers())
	}
	ps := tab.Peers()
	if ps[0].MAC != macA || ps[0].Serial != 2 || ps[0].First != 0 || ps[1].First != 2*time.Second {
		t.Fatalf("peers %+v", ps)
	}
}

func TestAnnouncerSchedule(t *testing.T) {
	a := NewAnnouncer(Schedule{}, 42)
	if a.S != DefaultSchedule {
		t.Fatalf("defaults %+v", a.S)
	}
	t0 := time.Unix(0, 0)
	if a.Due(t0) {
		t.Fatal("due before any round")
	}
	a.NewRound(t0)
	now := t0
	var gaps []time.Duration
	for i := 0; i < 10; i++ {
		if !a.Due(now) {
			t.Fatalf("announcement %d not due at %v", i, now.Sub(t0))
		}
		a.Sent(now)
		gaps = append(gaps, a.Next().Sub(now))
		now = a.Next()
	}
	for i, g := range gaps {
		want := time.Second
		if i >= 7 {
			want = 180 * time.Second
		}
		if g != want {
			t.Fatalf("gap after announcement %d: %v, want %v (all %v)", i+1, g, want, gaps)
		}
	}
	if a.Count != 10 || a.Rounds != 1 || a.InRound() {
		t.Fatalf("count %d rounds %d inRound %v", a.Count, a.Rounds, a.InRound())
	}
}

func TestNewSerialTriggersFreshRound(t *testing.T) {
	t0 := time.Unix(0, 0)
	a := NewAnnouncer(Schedule{Burst: 2, BurstInterval: time.Second, Interval: time.Minute}, 1)
	if a.Heard(NewPeer, t0) {
		t.Fatal("an idle announcer started a round")
	}
	a.NewRound(t0)
	a.Sent(t0)
	// Mid-burst, the rest of the burst serves the newcomer.
	if a.Heard(NewSerial, t0) || a.Rounds != 1 {
		t.Fatal("a fresh round started mid-burst")
	}
	a.Sent(t0.Add(time.Second))
	if a.InRound() {
		t.Fatal("burst not over")
	}
	if a.Heard(Known, t0.Add(2*time.Second)) {
		t.Fatal("a known peer started a round")
	}
	at := t0.Add(3 * time.Second)
	if !a.Heard(NewSerial, at) || a.Rounds != 2 || !a.InRound() || a.Next() != at {
		t.Fatalf("new serial after the burst: rounds %d next %v", a.Rounds, a.Next())
	}
	a2 := NewAnnouncer(Schedule{Burst: 1}, 1)
	a2.NewRound(t0)
	a2.Sent(t0)
	if !a2.Heard(NewPeer, at) {
		t.Fatal("a late new peer did not start a round")
	}
}

// The rules an announcement must meet to change a table: bounded, one
// entry per sender, a known entry changed only by its own sender under
// its own peer index.
func TestPeerTableRules(t *testing.T) {
	t0 := time.Unix(1000, 0)
	v, x := ether.MAC{2, 0, 0, 0, 0, 0x0a}, ether.MAC{2, 0, 0, 0, 0, 0x0b}
	tab := NewPeerTable(t0, 3)
	steps := []struct {
		what        string
		src, mac    ether.MAC
		serial      uint32
		index       uint16
		want        Change
		refused, cf int
	}{
		{"victim announces", v, v, 5, 1, NewPeer, 0, 0},
		{"spoofer announces itself", x, x, 7, 2, NewPeer, 0, 0},
		{"spoofer invents a peer", x, ether.MAC{2, 0, 0, 0, 0, 0x0c}, 8, 3, Conflict, 0, 1},
		{"another sender claims the victim's MAC, new serial", x, v, 6, 1, Conflict, 0, 2},
		{"the victim's own source under another index", v, v, 6, 9, Conflict, 0, 3},
		{"the victim restarts", v, v, 6, 1, NewSerial, 0, 3},
		{"a third host", ether.MAC{2, 0, 0, 0, 0, 0x0d}, ether.MAC{2, 0, 0, 0, 0, 0x0d}, 1, 4, NewPeer, 0, 3},
		{"a fourth host: table full", ether.MAC{2, 0, 0, 0, 0, 0x0e}, ether.MAC{2, 0, 0, 0, 0, 0x0e}, 1, 5, Refused, 1, 3},
		{"known peers still heard when full", v, v, 6, 1, Known, 1, 3},
	}
	for _, s := range steps {
		if got := tab.Observe(s.src, s.mac, s.serial, s.index, t0); got != s.want || tab.Refused != s.refused || tab.Conflicts != s.cf {
			t.Fatalf("%s: %v (refused %d, conflicts %d), want %v (%d, %d)", s.what, got, tab.Refused, tab.Conflicts, s.want, s.refused, s.cf)
		}
	}
	if tab.Len() != 3 || !tab.Matches(v, 1, 6) || tab.Matches(v, 1, 5) || tab.Matches(v, 2, 6) || tab.Matches(ether.MAC{2, 0, 0, 0, 0, 0x0e}, 5, 1) {
		t.Fatalf("table %+v", tab.Peers())
	}
	if NewPeerTable(t0, 0).max != DefaultMaxPeers {
		t.Fatal("an unset bound is not DefaultMaxPeers")
	}
}
