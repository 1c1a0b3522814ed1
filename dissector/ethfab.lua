-- Wireshark dissector for ethfab's frames: DMP (0x88B5), the Open-MX-style
-- announcements and connects (0x86DF), traffic frames and pings (0x88B6),
-- and QCN congestion notifications (0x22E7).
--
-- Install (Wireshark 3.x or 4.x, Lua plugins enabled):
--   mkdir -p ~/.local/lib/wireshark/plugins && cp dissector/ethfab.lua ~/.local/lib/wireshark/plugins/
-- or for one run:
--   tshark -X lua_script:dissector/ethfab.lua -r capture.pcap
--   ethfab capture LAB g0s0h0 -w - | wireshark -X lua_script:dissector/ethfab.lua -k -i -
--
-- The layouts are the Go code's (offsets from the start of the Ethernet
-- header; this dissector sees the payload after byte 14):
--   DMP         hostagent/dmp/dmp.go      version, type, attempt, reserved, txid
--   Open-MX     hostagent/omx/wire.go     peer index, type, nic_id_hi/lo, serial;
--                                         connect: seq, serial
--   traffic     traffic/frame.go          magic "EFTR", version, flags, run, hosts,
--                                         seq, send time, CRC-32
--   ping        emulator/fabric/ping.go   source host, destination host
--   CNM         qcn/cnm.go                802.1Qau's CNM PDU
-- TestDissector (dissector/dissector_test.go) checks every field on frames
-- the Go code built, through tshark.

local ethertype = DissectorTable.get("ethertype")

---------------------------------------------------------------------------
-- DMP
local dmp = Proto("ethfab_dmp", "ethfab Dynamic MAC Protocol")
local dmp_types = { [1] = "request", [2] = "reply" }
local dmp_f = {
	version = ProtoField.uint8("ethfab_dmp.version", "Version"),
	type = ProtoField.uint8("ethfab_dmp.type", "Type", base.DEC, dmp_types),
	attempt = ProtoField.uint8("ethfab_dmp.attempt", "Attempt"),
	txid = ProtoField.uint32("ethfab_dmp.txid", "Transaction ID", base.HEX),
}
dmp.fields = { dmp_f.version, dmp_f.type, dmp_f.attempt, dmp_f.txid }

function dmp.dissector(buf, pinfo, tree)
	if buf:len() < 8 then return 0 end
	pinfo.cols.protocol = "DMP"
	local t = tree:add(dmp, buf(0, 8))
	t:add(dmp_f.version, buf(0, 1))
	t:add(dmp_f.type, buf(1, 1))
	t:add(dmp_f.attempt, buf(2, 1))
	t:add(dmp_f.txid, buf(4, 4))
	pinfo.cols.info = string.format("DMP %s, attempt %d, txid 0x%08x",
		dmp_types[buf(1, 1):uint()] or "type " .. buf(1, 1):uint(), buf(2, 1):uint(), buf(4, 4):uint())
	return buf:len()
end
ethertype:add(0x88B5, dmp)

---------------------------------------------------------------------------
-- Open-MX announcements (omxoed's RAW frames) and ethfab's connects
local omx = Proto("ethfab_omx", "Open-MX (ethfab announcer)")
local omx_types = { [0x01] = "announcement (raw)", [0x40] = "connect request", [0x41] = "connect reply" }
local omx_f = {
	peer = ProtoField.uint16("ethfab_omx.peer_index", "Sender peer index"),
	type = ProtoField.uint8("ethfab_omx.type", "Packet type", base.HEX, omx_types),
	nic = ProtoField.ether("ethfab_omx.nic", "NIC address (payload)"),
	serial = ProtoField.uint32("ethfab_omx.serial", "Serial", base.HEX),
	seq = ProtoField.uint32("ethfab_omx.seq", "Request number"),
}
omx.fields = { omx_f.peer, omx_f.type, omx_f.nic, omx_f.serial, omx_f.seq }

function omx.dissector(buf, pinfo, tree)
	if buf:len() < 3 then return 0 end
	pinfo.cols.protocol = "Open-MX"
	local typ = buf(2, 1):uint()
	local t = tree:add(omx, buf())
	t:add(omx_f.peer, buf(0, 2))
	t:add(omx_f.type, buf(2, 1))
	if typ == 0x01 and buf:len() >= 30 then
		-- nic_id_hi (upper 16 bits of the MAC in a u32) then nic_id_lo:
		-- the MAC is bytes 20-21 and 22-25 of the payload.
		t:add(omx_f.nic, buf(20, 6))
		t:add(omx_f.serial, buf(26, 4))
		pinfo.cols.info = string.format("announcement from %s, serial 0x%08x", tostring(buf(20, 6):ether()), buf(26, 4):uint())
	elseif (typ == 0x40 or typ == 0x41) and buf:len() >= 14 then
		t:add(omx_f.seq, buf(6, 4))
		t:add(omx_f.serial, buf(10, 4))
		pinfo.cols.info = string.format("%s #%d, serial 0x%08x", omx_types[typ], buf(6, 4):uint(), buf(10, 4):uint())
	else
		pinfo.cols.info = "Open-MX type " .. typ
	end
	return buf:len()
end
ethertype:add(0x86DF, omx)

---------------------------------------------------------------------------
-- Traffic frames and pings (both 0x88B6: the magic tells them apart)
local trf = Proto("ethfab_traffic", "ethfab traffic")
local trf_f = {
	magic = ProtoField.string("ethfab_traffic.magic", "Magic"),
	version = ProtoField.uint8("ethfab_traffic.version", "Version"),
	flags = ProtoField.uint8("ethfab_traffic.flags", "Flags", base.HEX),
	measured = ProtoField.bool("ethfab_traffic.measured", "Measured", 8, nil, 0x01),
	probe = ProtoField.bool("ethfab_traffic.probe", "Probe", 8, nil, 0x02),
	run = ProtoField.uint32("ethfab_traffic.run", "Run", base.HEX),
	src = ProtoField.uint32("ethfab_traffic.src_host", "Source host"),
	dst = ProtoField.uint32("ethfab_traffic.dst_host", "Destination host"),
	seq = ProtoField.uint64("ethfab_traffic.seq", "Sequence"),
	send = ProtoField.uint64("ethfab_traffic.send_ns", "Send time (ns, CLOCK_MONOTONIC)"),
	crc = ProtoField.uint32("ethfab_traffic.crc", "CRC-32", base.HEX),
}
trf.fields = { trf_f.magic, trf_f.version, trf_f.flags, trf_f.measured, trf_f.probe, trf_f.run, trf_f.src, trf_f.dst, trf_f.seq, trf_f.send, trf_f.crc }

local ping = Proto("ethfab_ping", "ethfab ping")
local ping_f = {
	src = ProtoField.uint32("ethfab_ping.src_host", "Source host"),
	dst = ProtoField.uint32("ethfab_ping.dst_host", "Destination host"),
}
ping.fields = { ping_f.src, ping_f.dst }

function trf.dissector(buf, pinfo, tree)
	if buf:len() >= 38 and buf(0, 4):string() == "EFTR" then
		pinfo.cols.protocol = "ethfab"
		local t = tree:add(trf, buf(0, 38))
		t:add(trf_f.magic, buf(0, 4))
		t:add(trf_f.version, buf(4, 1))
		local fl = t:add(trf_f.flags, buf(5, 1))
		fl:add(trf_f.measured, buf(5, 1))
		fl:add(trf_f.probe, buf(5, 1))
		t:add(trf_f.run, buf(6, 4))
		t:add(trf_f.src, buf(10, 4))
		t:add(trf_f.dst, buf(14, 4))
		t:add(trf_f.seq, buf(18, 8))
		t:add(trf_f.send, buf(26, 8))
		t:add(trf_f.crc, buf(34, 4))
		local kind = "traffic"
		if bit.band(buf(5, 1):uint(), 0x02) ~= 0 then kind = "probe" end
		pinfo.cols.info = string.format("%s host %d > host %d seq %s", kind, buf(10, 4):uint(), buf(14, 4):uint(), tostring(buf(18, 8):uint64()))
		return buf:len()
	end
	if buf:len() >= 8 then
		pinfo.cols.protocol = "ethfab ping"
		local t = tree:add(ping, buf(0, 8))
		t:add(ping_f.src, buf(0, 4))
		t:add(ping_f.dst, buf(4, 4))
		pinfo.cols.info = string.format("ping host %d > host %d", buf(0, 4):uint(), buf(4, 4):uint())
		return buf:len()
	end
	return 0
end
ethertype:add(0x88B6, trf)

---------------------------------------------------------------------------
-- QCN congestion notification (802.1Qau CNM)
local cnm = Proto("ethfab_cnm", "QCN congestion notification")
local cnm_f = {
	version = ProtoField.uint16("ethfab_cnm.version", "Version", base.DEC, nil, 0xF000),
	fbq = ProtoField.uint16("ethfab_cnm.fbq", "Quantized feedback", base.DEC, nil, 0x003F),
	cp_switch = ProtoField.ether("ethfab_cnm.cp_switch", "Congestion point: switch"),
	cp_port = ProtoField.uint16("ethfab_cnm.cp_port", "Congestion point: port"),
	qoffset = ProtoField.int16("ethfab_cnm.qoffset", "Q - Qeq (64-byte units)"),
	qdelta = ProtoField.int16("ethfab_cnm.qdelta", "Q - Qold (64-byte units)"),
	prio = ProtoField.uint16("ethfab_cnm.priority", "Encapsulated priority", base.DEC, nil, 0xE000),
	vdst = ProtoField.ether("ethfab_cnm.victim_dst", "Encapsulated destination (victim's)"),
	vlen = ProtoField.uint16("ethfab_cnm.victim_len", "Encapsulated MSDU length"),
	msdu = ProtoField.bytes("ethfab_cnm.msdu", "Encapsulated MSDU"),
}
cnm.fields = { cnm_f.version, cnm_f.fbq, cnm_f.cp_switch, cnm_f.cp_port, cnm_f.qoffset, cnm_f.qdelta, cnm_f.prio, cnm_f.vdst, cnm_f.vlen, cnm_f.msdu }

function cnm.dissector(buf, pinfo, tree)
	if buf:len() < 24 then return 0 end
	pinfo.cols.protocol = "CNM"
	local t = tree:add(cnm, buf())
	t:add(cnm_f.version, buf(0, 2))
	t:add(cnm_f.fbq, buf(0, 2))
	t:add(cnm_f.cp_switch, buf(2, 6))
	t:add(cnm_f.cp_port, buf(8, 2))
	t:add(cnm_f.qoffset, buf(10, 2))
	t:add(cnm_f.qdelta, buf(12, 2))
	t:add(cnm_f.prio, buf(14, 2))
	t:add(cnm_f.vdst, buf(16, 6))
	t:add(cnm_f.vlen, buf(22, 2))
	local n = math.min(buf(22, 2):uint(), 64, buf:len() - 24)
	if n > 0 then t:add(cnm_f.msdu, buf(24, n)) end
	pinfo.cols.info = string.format("CNM from %s port %d, Fbq %d, for a frame to %s",
		tostring(buf(2, 6):ether()), buf(8, 2):uint(), bit.band(buf(0, 2):uint(), 0x3F), tostring(buf(16, 6):ether()))
	return buf:len()
end
ethertype:add(0x22E7, cnm)
