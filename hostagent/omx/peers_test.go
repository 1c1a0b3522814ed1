package omx

import (
	"testing"
	"time"

	"github.com/ethfab/ethfab/hostagent/ether"
)

func TestPeerTable(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tab := NewPeerTable(t0)
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
		if got := tab.Observe(s.mac, s.serial, 0, t0.Add(time.Duration(i)*time.Second)); got != s.want {
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
