package hostagent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/hostagent/dmp"
	"github.com/ethfab/ethfab/hostagent/omx"
)

// TestBigAnnounceWhereTimeGoes runs announcements with connect on 1,056
// hosts (Dragonfly p=4,a=8,h=4) in several receive-path settings and
// reports, for each, how far the fleet got in 20 s (one case 90 s), what
// was dropped on the way, and how the CPU was split between the agents
// (this process) and the lab's ovs-vswitchd. ETHFAB_BIG_CASE picks cases. It asserts nothing about speed (the machine
// is shared); it exists to tell whether the receive path or the CPU is
// the limit. ETHFAB_BIG=1 enables it.
func TestBigAnnounceWhereTimeGoes(t *testing.T) {
	if os.Getenv("ETHFAB_BIG") == "" {
		t.Skip("set ETHFAB_BIG=1")
	}
	lab, eps := upDMPLab(t, "hchk3", "topology.p", "4", "topology.a", "8", "topology.h", "4")
	n := len(eps)
	base := Options{
		DMP: true, DMPBackoff: dmp.Backoff{Timeout: 30 * time.Second},
		Announce: true, Schedule: omx.Schedule{Burst: 2, BurstInterval: 2 * time.Second, Interval: time.Hour}, Jitter: 2 * time.Second,
		Connect: true, ConnectAfter: 3 * time.Second, ConnectLimit: 8, ConnectInterval: 2 * time.Second,
		ExpectPeers: n - 1,
	}
	t.Logf("%d hosts on %d ovs-vswitchd instances", n, len(lab.OVS.Instances))
	cases := []struct {
		name  string
		limit time.Duration
		mod   func(o *Options)
	}{
		{"rcvbuf-1MiB", 20 * time.Second, func(o *Options) {}},
		{"rcvbuf-16MiB", 20 * time.Second, func(o *Options) { o.RecvBuffer = 16 << 20 }},
		{"rcvbuf-16MiB-quiet", 20 * time.Second, func(o *Options) { o.RecvBuffer = 16 << 20; o.QuietOnNewPeer = true }},
		// Without a deadline: does everything arrive, only late, or is
		// something lost on the way?
		{"rcvbuf-16MiB-quiet-90s", 90 * time.Second, func(o *Options) { o.RecvBuffer = 16 << 20; o.QuietOnNewPeer = true }},
	}
	only := os.Getenv("ETHFAB_BIG_CASE") // a comma-separated list of names
	for _, c := range cases {
		if only != "" && !slices.Contains(strings.Split(only, ","), c.name) {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			o := base
			c.mod(&o)
			f, err := OpenFleet(eps, o, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), c.limit)
			defer cancel()
			drops0 := dropStats(t, lab)
			self0, ovs0 := selfCPU(), ovsCPU(t, lab)
			start := time.Now()
			rs, err := f.Run(ctx, true)
			wall := time.Since(start)
			self1, ovs1 := selfCPU(), ovsCPU(t, lab)
			if err != nil {
				t.Log(err)
			}
			var lost []string
			for k, v := range dropStats(t, lab) {
				if d := v - drops0[k]; d != 0 {
					lost = append(lost, fmt.Sprintf("%s %d", k, d))
				}
			}
			slices.Sort(lost)
			t.Logf("%s: drops on the way (%d counters read): %s", c.name, len(drops0), strings.Join(lost, ", "))
			s := Summarize(rs)
			var sent, handled, self int
			for _, r := range rs {
				sent += r.AnnouncementsSent
				handled += r.Received.Announcements + r.Received.Self + r.Received.ConnectRequests + r.Received.ConnectReplies + r.Received.DMP
				self += r.Received.Self
			}
			want := sent * (n - 1)
			t.Logf("%s: %d/%d complete in %.1f s; peers %d..%d; connect %d/%d; announcements sent %d (rounds: %.2f per host) -> %d deliveries due to other hosts",
				c.name, s.Complete, n, wall.Seconds(), s.PeersMin, s.PeersMax, s.ConnectOK, s.ConnectAttempts, sent, float64(sent)/float64(n)/float64(o.Schedule.Burst), want)
			t.Logf("%s: frames handled by agents %d (%.0f/s), socket drops %d (%.1f%% of handled+dropped), own announcements looped back %d",
				c.name, handled, float64(handled)/wall.Seconds(), s.SocketDrops, 100*float64(s.SocketDrops)/float64(uint64(handled)+uint64(s.SocketDrops)), self)
			t.Logf("%s: CPU over %.1f s wall (2 cores = %.1f core-s): agents %.1f core-s, ovs-vswitchd %.1f core-s",
				c.name, wall.Seconds(), 2*wall.Seconds(), (self1 - self0).Seconds(), (ovs1 - ovs0).Seconds())
		})
	}
}

// selfCPU is this process's user+system time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ovsCPU sums user+system time of the lab's ovs-vswitchd processes.
func ovsCPU(t *testing.T, lab *fabric.Lab) time.Duration {
	var d time.Duration
	for _, in := range lab.OVS.Instances {
		b, err := os.ReadFile(filepath.Join(in.RunDir, "ovs-vswitchd.pid"))
		if err != nil {
			t.Logf("vswitchd pid: %v", err)
			continue
		}
		st, err := os.ReadFile("/proc/" + strings.TrimSpace(string(b)) + "/stat")
		if err != nil {
			t.Logf("vswitchd stat: %v", err)
			continue
		}
		// Fields after the command's closing parenthesis; utime and
		// stime are the 14th and 15th fields of the whole line.
		f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+2:]))
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		d += time.Duration(u+s) * time.Second / 100 // USER_HZ
	}
	return d
}

var reCoverage = regexp.MustCompile(`^(\S*drop\S*|\S*lost\S*|\S*overflow\S*)\s.*total: (\d+)`)

// dropStats counts what the lab lost between the agents' sockets: drops
// of the veths on the switches' side (a veth whose peer cannot take a
// frame counts it as its own tx drop) and ovs-vswitchd's drop counters.
func dropStats(t *testing.T, lab *fabric.Lab) map[string]int64 {
	m := map[string]int64{}
	seen := map[string]bool{}
	for _, in := range lab.OVS.Instances {
		if !seen[in.NetNS] {
			seen[in.NetNS] = true
			out, err := exec.Command("ip", "-n", in.NetNS, "-s", "-j", "link", "show").Output()
			if err != nil {
				t.Logf("ip -s link in %s: %v", in.NetNS, err)
				continue
			}
			var links []struct {
				Stats struct {
					RX struct{ Dropped, OverErrors int64 } `json:"rx"`
					TX struct{ Dropped, Errors int64 }     `json:"tx"`
				} `json:"stats64"`
			}
			if err := json.Unmarshal(out, &links); err != nil {
				t.Logf("ip -s -j link: %v", err)
			}
			for _, l := range links {
				m["veth rx_dropped"] += l.Stats.RX.Dropped
				m["veth tx_dropped"] += l.Stats.TX.Dropped
				m["veth tx_errors"] += l.Stats.TX.Errors
			}
		}
		out, err := exec.Command("ovs-appctl", "-t", filepath.Join(in.RunDir, "ovs-vswitchd.ctl"), "coverage/show").Output()
		if err != nil {
			t.Logf("coverage/show: %v", err)
			continue
		}
		for _, l := range strings.Split(string(out), "\n") {
			if mm := reCoverage.FindStringSubmatch(l); mm != nil {
				v, _ := strconv.ParseInt(mm[2], 10, 64)
				m["ovs "+mm[1]] += v
			}
		}
	}
	return m
}
