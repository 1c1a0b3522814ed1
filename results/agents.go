package results

import (
	"fmt"
	"strings"
)

// AgentPhase is what the host agents did in a dmp or announce phase: the
// figures seed 000 §IV argues with (who adopted which address, who heard
// whom, who could connect to whom).
type AgentPhase struct {
	Name        string `json:"name"`
	Kind        string `json:"kind"` // dmp or announce
	Assign      string `json:"assign"`
	PeerMACFrom string `json:"peer_mac_from,omitempty"`
	// BeforeDMP: the announcer started before DMP completed (case d).
	BeforeDMP       bool   `json:"before_dmp,omitempty"`
	OnAddressChange string `json:"on_address_change,omitempty"`
	Hosts           int    `json:"hosts"`

	// DMP, when this phase ran it, over every host: DMPMs, milliseconds
	// from the first request to the reply reaching the host (the kernel's
	// receive stamp: what the network took); DMPAdoptedMs, from the
	// phase's start to the host's interface having its new address, as the
	// agent saw it (a thousand agents share the machine's cores).
	DMPMs        *Quantile `json:"dmp_ms,omitempty"`
	DMPAdoptedMs *Quantile `json:"dmp_adopted_ms,omitempty"`
	DMPFailed    int       `json:"dmp_failed,omitempty"`
	// AdoptedPseudoMAC counts hosts whose interface ended with exactly
	// the pseudo-MAC the controller gave them.
	AdoptedPseudoMAC int `json:"adopted_pseudo_mac"`
	UniqueMACs       int `json:"unique_macs"`

	AnnouncementsSent     int     `json:"announcements_sent,omitempty"`
	AnnouncementsReceived int     `json:"announcements_received,omitempty"`
	PeersMin              int     `json:"peers_min,omitempty"`
	PeersMean             float64 `json:"peers_mean,omitempty"`
	PeersMax              int     `json:"peers_max,omitempty"`
	// FullTables counts hosts whose peer table held every other host.
	FullTables       int `json:"full_tables,omitempty"`
	ConnectAttempted int `json:"connect_attempted,omitempty"`
	ConnectSucceeded int `json:"connect_succeeded,omitempty"`
	// BadPeerAddr counts frames dropped because their source MAC was not
	// in the receiver's peer table (Open-MX's DROP_BAD_PEER_ADDR).
	BadPeerAddr int `json:"bad_peer_addr,omitempty"`
	// AllConnectedMs is when the last host had connected to every peer;
	// with before_dmp that is the time to repair. Null when some never did.
	AllConnectedMs *float64 `json:"all_connected_ms,omitempty"`
	SocketDrops    uint64   `json:"socket_drops,omitempty"`
	DurationS      float64  `json:"duration_s"`
}

// Quantile is p50/p99/max of a sample.
type Quantile struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// agentsSummary renders the host-agent phases of a run.
func agentsSummary(b *strings.Builder, as []AgentPhase) {
	if len(as) == 0 {
		return
	}
	b.WriteString("## Host agents\n\n")
	b.WriteString("| phase | assign | peer MAC from | hosts | DMP p50 / p99 / max ms | adopted pseudo-MAC | peers min / mean / max | full tables | connects | bad peer addr | all connected at |\n")
	b.WriteString("|---|---|---|---:|---|---:|---|---:|---|---:|---:|\n")
	for _, a := range as {
		dmp := "–"
		if a.DMPMs != nil {
			dmp = fmt.Sprintf("%.1f / %.1f / %.1f", a.DMPMs.P50, a.DMPMs.P99, a.DMPMs.Max)
			if a.DMPFailed > 0 {
				dmp += fmt.Sprintf(" (%d failed)", a.DMPFailed)
			}
		}
		from := a.PeerMACFrom
		if a.BeforeDMP {
			from += ", announcing before DMP"
		}
		peers, full, conn, all := "–", "–", "–", "–"
		if a.Kind == "announce" {
			peers = fmt.Sprintf("%d / %.1f / %d", a.PeersMin, a.PeersMean, a.PeersMax)
			full = fmt.Sprintf("%d", a.FullTables)
			conn = fmt.Sprintf("%d of %d", a.ConnectSucceeded, a.ConnectAttempted)
			all = "never"
			if a.AllConnectedMs != nil {
				all = fmt.Sprintf("%.0f ms", *a.AllConnectedMs)
			}
		}
		fmt.Fprintf(b, "| %s | %s | %s | %d | %s | %d | %s | %s | %s | %d | %s |\n", a.Name, a.Assign, from, a.Hosts, dmp,
			a.AdoptedPseudoMAC, peers, full, conn, a.BadPeerAddr, all)
	}
	b.WriteString("\n")
}
