package main

import (
	"context"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/hostagent"
	"github.com/ethfab/ethfab/hostagent/dmp"
	"github.com/ethfab/ethfab/hostagent/omx"
)

func agentCommand() *cli.Command {
	return &cli.Command{
		Name:  "agent",
		Usage: "run the host agent: DMP client, Open-MX-style announcer/listener, connect check",
		Description: "On one interface (--iface, optionally inside --netns), or on every host of a running lab\n" +
			"(--lab) from one process. With --for it runs that long, prints its results and exits;\n" +
			"without, it runs until interrupted and then prints them. Exit status 1 if DMP failed,\n" +
			"2 if a connect check left peers unconnected.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "iface", Value: "eth0", Usage: "interface to serve"},
			&cli.StringFlag{Name: "netns", Usage: "named network namespace the interface is in"},
			&cli.StringFlag{Name: "lab", Usage: "serve every host of this running lab, one process for all"},
			&cli.BoolFlag{Name: "dmp", Usage: "learn the address from the access switch (DMP) at start"},
			&cli.DurationFlag{Name: "dmp-timeout", Value: dmp.DefaultBackoff.Timeout, Usage: "give DMP up after this long"},
			&cli.DurationFlag{Name: "dmp-delay", Usage: "wait this long before the DMP request"},
			&cli.BoolFlag{Name: "announce", Usage: "announce this host and build a peer table (Open-MX omxoed style, EtherType 0x86DF)"},
			&cli.BoolFlag{Name: "announce-before-dmp", Usage: "start announcing before DMP has completed (stale MAC in the first announcements)"},
			&cli.IntFlag{Name: "burst", Value: omx.DefaultSchedule.Burst, Usage: "announcements per round"},
			&cli.DurationFlag{Name: "burst-interval", Value: omx.DefaultSchedule.BurstInterval, Usage: "between a round's announcements"},
			&cli.DurationFlag{Name: "interval", Value: omx.DefaultSchedule.Interval, Usage: "between announcements after a round"},
			&cli.DurationFlag{Name: "jitter", Usage: "spread each round's first announcement over [0, jitter) (default: 0, or burst-interval with --lab)"},
			&cli.StringFlag{Name: "peer-mac-from", Value: "payload", Usage: "take a peer's MAC from the announcement's payload (Open-MX) or header"},
			&cli.StringFlag{Name: "on-address-change", Value: "round", Usage: "when the MAC changes while announcing: round (new serial, fresh round) or none (Open-MX)"},
			&cli.BoolFlag{Name: "connect", Usage: "connect to every peer in the table (CONNECT-like request/reply over 0x86DF)"},
			&cli.DurationFlag{Name: "connect-interval", Value: time.Second, Usage: "between connect passes"},
			&cli.IntFlag{Name: "connect-limit", Usage: "connect to at most this many peers (0: all)"},
			&cli.IntFlag{Name: "max-peers", Usage: "peer-table bound; new peers beyond it are refused and counted (0: 65536)"},
			&cli.IntFlag{Name: "expect-peers", Usage: "peer-table size that counts as full (with --lab: hosts-1)"},
			&cli.BoolFlag{Name: "exit-when-complete", Usage: "stop as soon as DMP, the peer table and the connections are complete"},
			&cli.DurationFlag{Name: "for", Usage: "run this long, then report and exit (default: until interrupted)"},
			&cli.BoolFlag{Name: "peers", Usage: "include the peer table and connect times in the JSON"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON"},
		},
		Action: runAgent,
	}
}

func agentOptions(c *cli.Context) (hostagent.Options, error) {
	from, err := addressing.ParsePeerMACSource(c.String("peer-mac-from"))
	if err != nil {
		return hostagent.Options{}, err
	}
	onChange, err := addressing.ParseAddressChange(c.String("on-address-change"))
	if err != nil {
		return hostagent.Options{}, err
	}
	o := hostagent.Options{
		Iface:             c.String("iface"),
		DMP:               c.Bool("dmp"),
		DMPBackoff:        dmp.Backoff{Timeout: c.Duration("dmp-timeout")},
		DMPDelay:          c.Duration("dmp-delay"),
		Announce:          c.Bool("announce"),
		AnnounceBeforeDMP: c.Bool("announce-before-dmp"),
		Schedule:          omx.Schedule{Burst: c.Int("burst"), BurstInterval: c.Duration("burst-interval"), Interval: c.Duration("interval")},
		Jitter:            c.Duration("jitter"),
		PeerMACFrom:       from,
		OnAddressChange:   onChange,
		Connect:           c.Bool("connect"),
		ConnectInterval:   c.Duration("connect-interval"),
		ConnectLimit:      c.Int("connect-limit"),
		ExpectPeers:       c.Int("expect-peers"),
		MaxPeers:          c.Int("max-peers"),
		ExitWhenComplete:  c.Bool("exit-when-complete"),
		RecordPeers:       c.Bool("peers"),
		RecordConnects:    c.Bool("peers"),
	}
	if !o.DMP && !o.Announce && !o.Connect {
		return o, fmt.Errorf("nothing to do: give --dmp, --announce and/or --connect")
	}
	return o, nil
}

func runAgent(c *cli.Context) error {
	o, err := agentOptions(c)
	if err != nil {
		return err
	}
	ctx, stop := interruptible(c.Duration("for"))
	defer stop()
	if c.String("lab") != "" {
		return runLabAgents(ctx, c, o)
	}
	sock, err := hostagent.Open(c.String("netns"), o.Iface, o.RecvBuffer)
	if err != nil {
		return err
	}
	r, runErr := hostagent.New(sock, o).Run(ctx)
	if c.Bool("json") {
		if err := printJSON(c, r); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(c.App.Writer, "%s: %s -> %s", r.Iface, r.MACBefore, r.MACAfter)
		if r.DMPMs != nil {
			fmt.Fprintf(c.App.Writer, ", DMP %.2f ms (%d requests)", *r.DMPMs, r.DMPAttempts)
		}
		fmt.Fprintf(c.App.Writer, ", %d peers, %d announcements in %d rounds, connect %d/%d, %d bad-peer-addr drops\n",
			r.Peers, r.AnnouncementsSent, r.Rounds, r.Connect.Succeeded, r.Connect.Attempted, r.Drops.BadPeerAddr)
	}
	if runErr != nil {
		return runErr
	}
	if o.Connect && r.Connect.Failed > 0 {
		return cli.Exit("", 2)
	}
	return nil
}

// runLabAgents serves every host of a running lab from this process.
func runLabAgents(ctx context.Context, c *cli.Context, o hostagent.Options) error {
	if err := checkLab("--lab", c.String("lab")); err != nil {
		return err
	}
	lab, err := fabric.Load(c.String("lab"))
	if err != nil {
		return err
	}
	if err := lab.OnOneMachine("ethfab agent --lab"); err != nil {
		return err
	}
	eps := make([]hostagent.Endpoint, len(lab.Hosts))
	for i, h := range lab.Hosts {
		eps[i] = hostagent.Endpoint{Name: h.Name, NetNS: h.NetNS, Iface: h.Iface}
	}
	if !c.IsSet("expect-peers") {
		o.ExpectPeers = len(eps) - 1
	}
	if !c.IsSet("jitter") {
		o.Jitter = o.Schedule.WithDefaults().BurstInterval
	}
	f, err := hostagent.OpenFleet(eps, o, nil)
	if err != nil {
		return err
	}
	rs, runErr := f.Run(ctx, o.ExitWhenComplete)
	sum := hostagent.Summarize(rs)
	if c.Bool("json") {
		if err := printJSON(c, struct {
			Lab     string              `json:"lab"`
			Summary hostagent.Summary   `json:"summary"`
			Agents  []*hostagent.Result `json:"agents"`
		}{lab.Lab, sum, rs}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(c.App.Writer, "%d agents: DMP %d done, %d failed (p50 %.2f ms, p99 %.2f ms, max %.2f ms); peers %d..%d; connect %d/%d; %d complete\n",
			sum.Agents, sum.DMPDone, sum.DMPFailed, sum.DMPMs.P50, sum.DMPMs.P99, sum.DMPMs.Max,
			sum.PeersMin, sum.PeersMax, sum.ConnectOK, sum.ConnectAttempts, sum.Complete)
	}
	if runErr != nil {
		return runErr
	}
	if o.Connect && sum.ConnectOK < sum.ConnectAttempts {
		return cli.Exit("", 2)
	}
	return nil
}
