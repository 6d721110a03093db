package htmlreport

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Each renderX draws one kind of report: its charts, whose bars are
// medians of trials with the trials' min–max as whiskers, and its tables,
// with the text report's columns; a figure the report lacks is "–".

func renderRead(b *strings.Builder, rep map[string]any) headline {
	b.WriteString("<h2>read — 4 KiB O_DIRECT random reads</h2>\n")
	c := chart{title: "IOPS by mode (median of trials; device limit: fio in batches of 64)", unit: "IOPS"}
	labels := map[string]string{}
	serial := missing
	for _, r := range rows(rep, "results") {
		if str(r["mode"]) == "serial-pread" {
			serial = measured(r, "iops")
		}
	}
	var trs [][]string
	for _, r := range rows(rep, "results") {
		mode, label := str(r["mode"]), str(r["label"])
		labels[mode] = label
		s := sURing
		switch {
		case strings.HasPrefix(mode, "fio"):
			s = sFio
		case strings.Contains(mode, "pread"):
			s = sSyscall
		case strings.HasPrefix(mode, "sqpoll"):
			s = sSQPoll
		}
		iops := measured(r, "iops")
		lo, hi := trialSpread(r, "trial_iops", "iops_min", "iops_max")
		if mode == "fio-qd64-batch" && !math.IsNaN(iops) {
			c.limits = append(c.limits, limit{"fio, batches of 64", iops, "limit"})
		}
		c.marks = append(c.marks, mark{label: label, value: iops, lo: lo, hi: hi, s: s, why: "did not run"})
		trs = append(trs, []string{label, cell(num(r["batch"]), "%.0f"), cell(iops, ""), cell(measured(r, "iops_best"), ""), rangeCell(lo, hi),
			latency(r, "per_read", "p50_us"), latency(r, "per_read", "p99_us"), latency(r, "per_batch", "p50_us"), latency(r, "per_batch", "p99_us"),
			cell(measured(r, "cpu_s_per_million"), "%.1f"), ratioCell(iops, serial)})
	}
	c.draw(b)
	table(b, []string{"mode", "batch", "IOPS (median)", "best", "min–max", "p50 µs per read", "p99 µs per read", "p50 µs per batch", "p99 µs per batch", "CPU s / M reads", "× serial"}, trs)
	h := headline{by: ratioHeadline(rep, labels, "IOPS")}
	if m, ok := fastest(c.marks, false, sFio, sDevice); ok {
		h.won = fmt.Sprintf("%s: %s IOPS", m.label, fmtNum(m.value))
	}
	return h
}

// latency is the cell of one percentile of r's latency kind (per_read or
// per_batch): "–" where the mode could not measure that kind.
func latency(r map[string]any, kind, p string) string {
	l, _ := r[kind].(map[string]any)
	return cell(measured(l, p), "")
}

func renderWAL(b *strings.Builder, rep map[string]any) headline {
	b.WriteString("<h2>wal — 1 KiB durable appends</h2>\n")
	rate := chart{title: "appends/s by system and writers (median of trials)", unit: "appends/s"}
	p99 := chart{title: "append p99 latency by system and writers (device floors drawn)", unit: "µs", scale: logScale}
	labels := map[string]string{}
	var fsync float64 = missing
	for _, r := range rows(rep, "results") {
		if str(r["mode"]) == "fsync-per-write" {
			fsync = measured(r, "ops_per_s")
		}
	}
	var trs [][]string
	for _, r := range rows(rep, "results") {
		label := str(r["label"])
		labels[str(r["mode"])] = label
		s := sPeer
		switch str(r["system"]) {
		case "ringstore", "kv":
			s = map[string]series{"sqpoll": sSQPoll, "syscall": sSyscall}[str(r["backend"])] // io_uring unless named
		case "os.File":
			s = sSyscall
		case "device":
			s = sDevice
		}
		ops := measured(r, "ops_per_s")
		lo, hi := trialSpread(r, "trial_ops_per_s", "ops_per_s_min", "ops_per_s_max")
		rate.marks = append(rate.marks, mark{label: label, value: ops, lo: lo, hi: hi, s: s, why: "did not run"})
		plo, phi := spreadOf(floats(r, "trial_p99_us"))
		p99.marks = append(p99.marks, mark{label: label, value: measured(r, "p99_us"), lo: plo, hi: phi, s: s, why: "did not run"})
		flush := "–"
		if f50, f99 := measured(r, "flush_p50_us"), measured(r, "flush_p99_us"); !math.IsNaN(f50) {
			flush = fmtNum(f50) + " / " + cell(f99, "")
		}
		epf, fps := "–", "–"
		if s != sDevice && !math.IsNaN(measured(r, "flushes_per_s")) {
			mark := ""
			if r["flushes_inferred"] == true {
				mark = "†"
			}
			epf, fps = cell(measured(r, "entries_per_flush"), "%.1f")+mark, cell(measured(r, "flushes_per_s"), "%.0f")+mark
		}
		vsFsync := "–"
		if s != sDevice {
			vsFsync = ratioCell(ops, fsync)
		}
		trs = append(trs, []string{label, cell(num(r["writers"]), "%.0f"), cell(ops, ""), cell(measured(r, "ops_per_s_best"), ""), rangeCell(lo, hi),
			cell(measured(r, "p50_us"), ""), cell(measured(r, "p99_us"), ""), flush, epf, fps, cell(measured(r, "cpu_us_per_op"), "%.1f"), vsFsync})
	}
	if d, ok := rep["device_group_write"].(map[string]any); ok && !math.IsNaN(measured(d, "p99_us")) {
		p99.limits = append(p99.limits, limit{"device: one group write + fdatasync, p99", measured(d, "p99_us"), "limit"})
	}
	if d, ok := rep["device_fdatasync"].(map[string]any); ok && !math.IsNaN(measured(d, "p50_us")) {
		p99.limits = append(p99.limits, limit{"device: one fdatasync, p50", measured(d, "p50_us"), "limit2"})
	}
	rate.draw(b)
	p99.draw(b)
	table(b, []string{"mode", "writers", "appends/s (median)", "best", "min–max", "p50 µs", "p99 µs", "flush p50/p99 µs", "entries/flush", "flushes/s", "CPU µs/append", "× fsync-per-write"}, trs)
	b.WriteString(`<p class="note">† inferred: one flush per append for engines that do not count their flushes.</p>` + "\n")
	h := headline{by: ratioHeadline(rep, labels, "appends/s")}
	if m, ok := fastest(rate.marks, false, sDevice); ok {
		h.won = fmt.Sprintf("%s: %s appends/s", m.label, fmtNum(m.value))
	}
	return h
}

func renderScan(b *strings.Builder, rep map[string]any) headline {
	b.WriteString("<h2>scan — concurrent Arrow queries under a memory limit</h2>\n")
	mean := chart{title: "mean query latency by mode (median of trials; floors drawn)", unit: "ms", scale: logScale}
	p95 := chart{title: "p95 query latency by mode (median of trials; floors drawn)", unit: "ms", scale: logScale}
	labels := map[string]string{}
	var trs [][]string
	type perMode struct {
		mode  string
		s     series
		mean  map[string]any
		trial map[string]any
	}
	var withQueries []perMode
	seriesOf := map[string]series{"mmap": sMmap, "pread": sSyscall, "direct": sURing, "pool": sPool, "memory": sCPU}
	for _, r := range rows(rep, "results") {
		mode, label := str(r["mode"]), str(r["label"])
		labels[mode] = mode
		s, ok := seriesOf[mode]
		if !ok {
			s = sPeer
		}
		lo, hi := spreadOf(floats(r, "trial_mean_ms"))
		mean.marks = append(mean.marks, mark{label: label, value: measured(r, "mean_ms"), lo: lo, hi: hi, s: s, why: "did not run"})
		plo, phi := spreadOf(floats(r, "trial_p95_ms"))
		p95.marks = append(p95.marks, mark{label: label, value: measured(r, "p95_ms"), lo: plo, hi: phi, s: s, why: "did not run"})
		glo, ghi := spreadOf(floats(r, "trial_gbps"))
		if math.IsNaN(measured(r, "gbps")) {
			glo, ghi = missing, missing
		}
		trs = append(trs, []string{label, cell(measured(r, "mean_ms"), "%.0f"), rangeCell(lo, hi), cell(measured(r, "p95_ms"), "%.0f"), rangeCell(plo, phi),
			cell(measured(r, "gbps"), "%.2f"), rangeCell(glo, ghi), cell(measured(r, "vs_device"), "%.2f"), cell(measured(r, "device_bytes")/(1<<20), "%.0f"),
			fmtNum(num(r["major_faults"])), fmtNum(num(r["minor_faults"])), cell(measured(r, "max_rss_bytes")/(1<<20), "%.0f"), cell(measured(r, "queries_per_s"), "%.2f"), cell(measured(r, "cpu_seconds"), "%.1f")})
		if qm, ok := r["query_mean_ms"].(map[string]any); ok && (mode == "pool" || mode == "mmap") {
			tq, _ := r["trial_query_mean_ms"].(map[string]any)
			withQueries = append(withQueries, perMode{mode, s, qm, tq})
		}
	}
	for _, key := range []string{"device", "device_fio"} {
		d, ok := rep[key].(map[string]any)
		if !ok {
			continue
		}
		lo, hi := spreadOf(floats(d, "trial_gbps"))
		vs := "1.00"
		if key == "device_fio" {
			dev, _ := rep["device"].(map[string]any)
			vs = ratioCell(measured(d, "gbps"), measured(dev, "gbps"))
		}
		trs = append(trs, []string{str(d["label"]), "–", "–", "–", "–", cell(measured(d, "gbps"), "%.2f"), rangeCell(lo, hi), vs, cell(measured(d, "bytes")/(1<<20), "%.0f"),
			"–", "–", cell(measured(d, "max_rss_bytes")/(1<<20), "%.0f"), "–", "–"})
	}
	if f, ok := rep["floors"].(map[string]any); ok {
		for _, c := range []*chart{&mean, &p95} {
			if v := measured(f, "device_ms"); !math.IsNaN(v) {
				c.limits = append(c.limits, limit{"device floor", v, "limit"})
			}
			if v := measured(f, "memory_mean_ms"); !math.IsNaN(v) {
				c.limits = append(c.limits, limit{"CPU floor (memory mode's mean)", v, "limit2"})
			}
		}
	}
	mean.draw(b)
	p95.draw(b)
	table(b, []string{"mode", "mean ms", "min–max", "p95 ms", "min–max", "GB/s", "min–max", "× device", "MiB read", "major faults", "minor faults", "max RSS MiB", "queries/s", "CPU s"}, trs)

	queries := map[string]bool{}
	for _, m := range withQueries {
		for q := range m.mean {
			queries[q] = true
		}
	}
	var qs []string
	for q := range queries {
		qs = append(qs, q)
	}
	sort.Strings(qs)
	perQuery := chart{title: "mean latency per query: pool against mmap (median of trials)", unit: "ms", scale: logScale}
	for _, q := range qs {
		for _, m := range withQueries {
			v := missing
			if x, ok := m.mean[q].(float64); ok && x > 0 {
				v = x
			}
			lo, hi := spreadOf(floats(m.trial, q))
			perQuery.marks = append(perQuery.marks, mark{label: q + " · " + m.mode, value: v, lo: lo, hi: hi, s: m.s, why: "not run in this mode"})
		}
	}
	perQuery.draw(b)

	h := headline{by: ratioHeadline(rep, labels, "queries/s")}
	if m, ok := fastest(mean.marks, true, sCPU); ok {
		h.won = fmt.Sprintf("%s: mean query %s ms", m.label, fmtNum(m.value))
	}
	return h
}

func renderKV(b *strings.Builder, rep map[string]any) headline {
	b.WriteString("<h2>kv — cold point reads in batches</h2>\n")
	c := chart{title: "keys/s by mode (median of trials; device- and CPU-bound rates drawn)", unit: "keys/s"}
	labels := map[string]string{}
	var trs [][]string
	for _, r := range rows(rep, "results") {
		label := str(r["label"])
		labels[str(r["mode"])] = label
		s := sPeer
		switch {
		case str(r["system"]) == "device":
			s = sDevice
		case r["cache_hit_rate"] == 1.0 || strings.HasSuffix(str(r["access"]), "-hot"):
			s = sCPU
		case str(r["system"]) == "ringstore":
			s = map[string]series{"syscall": sSyscall, "sqpoll": sSQPoll}[str(r["io_backend"])] // io_uring unless named
		}
		keys := measured(r, "keys_per_s")
		lo, hi := trialSpread(r, "trial_keys_per_s", "keys_per_s_min", "keys_per_s_max")
		why := "did not run"
		if s == sDevice {
			why = "no keys/s: the device's IOPS are divided by MultiGet's blocks per key, and MultiGet did not run"
		}
		c.marks = append(c.marks, mark{label: label, value: keys, lo: lo, hi: hi, s: s, why: why})
		hits := "–"
		if v := measured(r, "cache_hit_rate"); !math.IsNaN(v) {
			hits = fmt.Sprintf("%.0f%%", 100*v)
		}
		trs = append(trs, []string{label, cell(keys, ""), cell(measured(r, "keys_per_s_best"), ""), rangeCell(lo, hi), cell(measured(r, "p50_us"), ""), cell(measured(r, "p99_us"), ""),
			cell(measured(r, "block_reads_per_s"), "%.0f"), cell(measured(r, "blocks_per_key"), "%.2f"), hits, cell(measured(r, "device_read_mb_per_s"), "%.0f"),
			cell(measured(r, "cpu_us_per_key"), "%.1f"), cell(measured(r, "cgroup_peak_bytes")/(1<<20), "%.0f")})
	}
	if l, ok := rep["limits"].(map[string]any); ok {
		if v := measured(l, "device_bound_keys_per_s"); !math.IsNaN(v) {
			c.limits = append(c.limits, limit{"device-bound", v, "limit"})
		}
		if v := measured(l, "cpu_bound_keys_per_s"); !math.IsNaN(v) {
			c.limits = append(c.limits, limit{"CPU-bound", v, "limit2"})
		}
	}
	c.draw(b)
	table(b, []string{"mode", "keys/s (median)", "best", "min–max", "p50 µs", "p99 µs", "block reads/s", "blocks/key", "cache hits", "device MB/s", "CPU µs/key", "cgroup peak MiB"}, trs)
	h := headline{by: ratioHeadline(rep, labels, "keys/s")}
	if m, ok := fastest(c.marks, false, sDevice, sCPU); ok {
		h.won = fmt.Sprintf("%s: %s keys/s", m.label, fmtNum(m.value))
	}
	return h
}

// onOffSpread is the spread of ON ÷ OFF over every pair of trials: the
// slowest ON trial over the fastest OFF one to the fastest ON over the
// slowest OFF.
func onOffSpread(on, off []float64) (lo, hi float64) {
	onLo, onHi := spreadOf(on)
	offLo, offHi := spreadOf(off)
	if math.IsNaN(onLo) || math.IsNaN(offLo) || offLo <= 0 {
		return missing, missing
	}
	return onLo / offHi, onHi / offLo
}

const onOffSpreadText = "trials: slowest ON ÷ fastest OFF to fastest ON ÷ slowest OFF"

func renderNexmark(b *strings.Builder, rep map[string]any) headline {
	b.WriteString("<h2>nexmark — io_uring ON vs OFF</h2>\n")
	ratio := chart{title: "ON/OFF throughput ratio per query (median of trials)", unit: "× OFF", scale: ratioScale, spread: onOffSpreadText}
	eps := chart{title: "events/s per query, ON and OFF (median of trials)", unit: "events/s"}
	var trs [][]string
	for _, q := range rows(rep, "queries") {
		name := str(q["query"])
		on, off := floats(q, "on_eps"), floats(q, "off_eps")
		why := "not tested: " + str(q["why"])
		r, best, median := missing, "not tested", str(q["why"])
		if q["tested"] == true {
			r, best, median = measured(q, "ratio_median"), cell(measured(q, "ratio_best"), "%.2f×"), cell(measured(q, "ratio_median"), "%.2f×")
		}
		lo, hi := onOffSpread(on, off)
		ratio.marks = append(ratio.marks, mark{label: name, value: r, lo: lo, hi: hi, s: sURing, why: why})
		onLo, onHi := spreadOf(on)
		offLo, offHi := spreadOf(off)
		eps.marks = append(eps.marks, mark{label: name + " ON", value: measured(q, "on_median_eps"), lo: onLo, hi: onHi, s: sURing, why: why},
			mark{label: name + " OFF", value: measured(q, "off_median_eps"), lo: offLo, hi: offHi, s: sSyscall, why: why})
		eq := "equal"
		if q["checksum_equal"] != true {
			eq = "DIFFERS"
		}
		share, vsCache := "–", "–"
		if q["stateful"] == true {
			share, vsCache = fmt.Sprintf("%.0f%%", 100*num(q["off_state_read_share"])), cell(measured(q, "state_vs_cache"), "%.1f")
		}
		trs = append(trs, []string{name, cell(measured(q, "on_median_eps"), ""), cell(measured(q, "off_median_eps"), ""), best, median,
			rangeCell(onLo, onHi), rangeCell(offLo, offHi), share, cell(measured(q, "state_bytes")/(1<<20), "%.1f"), vsCache, eq})
	}
	if v := measured(rep, "geomean_best"); !math.IsNaN(v) {
		ratio.limits = append(ratio.limits, limit{"geometric mean, best-of", v, "limit"})
	}
	ratio.draw(b)
	eps.draw(b)
	if len(trs) > 0 {
		table(b, []string{"query", "ON events/s (median)", "OFF events/s (median)", "ON/OFF best", "ON/OFF median", "ON trials min–max", "OFF trials min–max", "OFF time in state reads", "state MiB", "× cache", "output"}, trs)
	}
	h := headline{
		won: fmt.Sprintf("ON faster in %.0f of %d queries, slower in %.0f", num(rep["faster"]), len(trs), num(rep["slower"])),
		by:  fmt.Sprintf("geometric mean ON/OFF %s best-of, %s median-of", cell(measured(rep, "geomean_best"), "%.2f×"), cell(measured(rep, "geomean_median"), "%.2f×")),
	}
	if l, ok := rep["large_state"].(map[string]any); ok {
		renderNexmarkLarge(b, l)
		h.by += fmt.Sprintf("; large state %s best-of", cell(measured(l, "geomean_on_off_best"), "%.2f×"))
	}
	return h
}

// largeModes are the large-state regime's modes, in the order drawn.
var largeModes = []struct {
	key, label string
	s          series
}{
	{"on", "ON", sURing},
	{"on-ahead", "ON, read-ahead", sURing},
	{"on-sync", "ON, no read-ahead", sURing},
	{"off", "OFF", sSyscall},
	{"off-pool3", "OFF, 3 readers", sSyscall},
	{"off-pool16", "OFF, 16 readers", sSyscall},
	{"cached", "all cached", sCPU},
	{"cached-reads", "all cached, ON's further reads beside", sCPUReads},
}

// largeByMode is a large-state query's per-mode map under key.
func largeByMode(q map[string]any, key string) map[string]any {
	if m, ok := q[key].(map[string]any); ok {
		return m
	}
	return map[string]any{}
}

// renderNexmarkLarge draws the large-state regime: events/s per query and
// mode, ON ÷ its limit and ON/OFF per query, and its table.
func renderNexmarkLarge(b *strings.Builder, l map[string]any) {
	fmt.Fprintf(b, "<h3>large state: %s in-flight auctions, %s active people, %s events</h3>\n", fmtNum(num(l["in_flight_auctions"])), fmtNum(num(l["active_people"])), fmtNum(num(l["events"])))
	modes := chart{title: "large state: events/s per query and mode (median of trials)", unit: "events/s"}
	vsLimit := chart{title: "large state: ON ÷ its limit (the lesser of all-cached and the device floor), per stateful query", unit: "× limit", scale: ratioScale}
	vsOff := chart{title: "large state: ON/OFF per query (median of trials)", unit: "× OFF", scale: ratioScale, spread: onOffSpreadText}
	// A mode no query ran is left out; one that some ran is "–" for the others.
	var ran []int
	for i, m := range largeModes {
		for _, q := range rows(l, "queries") {
			if _, ok := largeByMode(q, "eps_median")[m.key]; ok {
				ran = append(ran, i)
				break
			}
		}
	}
	var trs [][]string
	for _, q := range rows(l, "queries") {
		name := str(q["query"])
		med, trials := largeByMode(q, "eps_median"), largeByMode(q, "trial_eps")
		cpu := largeByMode(q, "cpu_us_per_event")
		notRun := "not run for this query"
		if q["stateful"] != true {
			notRun = "not run for a query without state"
		}
		for _, i := range ran {
			m := largeModes[i]
			lo, hi := spreadOf(floats(trials, m.key))
			modes.marks = append(modes.marks, mark{label: name + " · " + m.label, value: measured(med, m.key), lo: lo, hi: hi, s: m.s, why: notRun})
		}
		if q["stateful"] == true {
			modes.marks = append(modes.marks, mark{label: name + " · device floor", value: measured(q, "device_floor_eps"), lo: missing, hi: missing, s: sDevice, why: "not measured"})
		}
		on, off := floats(trials, "on"), floats(trials, "off")
		why := "not tested: " + str(q["why"])
		if q["tested"] == true && q["stateful"] == true {
			lim := measured(q, "limit_eps")
			lo, hi := spreadOf(on)
			vsLimit.marks = append(vsLimit.marks, mark{label: name, value: measured(q, "on_vs_limit"), lo: lo / lim, hi: hi / lim, s: sURing, why: "no limit measured"})
		}
		r := missing
		if q["tested"] == true {
			r = measured(q, "on_vs_off")
		}
		lo, hi := onOffSpread(on, off)
		vsOff.marks = append(vsOff.marks, mark{label: name, value: r, lo: lo, hi: hi, s: sURing, why: why})
		ratio := cell(r, "%.2f×")
		if q["tested"] != true {
			ratio = why
		}
		share := "–"
		if q["stateful"] == true {
			share = fmt.Sprintf("%.0f%% (%s)", 100*num(q["off_state_read_share"]), cell(measured(q, "gain_bound"), "%.2f×"))
		}
		out := "equal"
		if q["checksum_equal"] != true {
			out = "DIFFERS"
		}
		row := []string{name}
		for _, i := range ran {
			row = append(row, cell(measured(med, largeModes[i].key), "%.0f"))
		}
		row = append(row, cell(measured(q, "on_reads_in_flight"), "%.1f"), cell(measured(q, "device_floor_eps"), "%.0f"), cell(measured(q, "on_vs_limit"), "%.2f"), cell(measured(q, "reads_ceiling_vs_limit"), "%.2f"), cell(measured(q, "on_vs_reads_ceiling"), "%.2f"), cell(measured(q, "cpu_ceiling_vs_limit"), "%.2f"), ratio, cell(measured(q, "on_vs_best_pool"), "%.2f×"),
			cell(measured(cpu, "on"), "%.1f"), cell(measured(cpu, str(q["best_pool"])), "%.1f"), share,
			cell(measured(q, "state_bytes")/(1<<20), "%.1f"), cell(measured(q, "working_set_bytes")/(1<<20), "%.1f"), out)
		trs = append(trs, row)
	}
	for _, x := range rows(l, "bars") {
		if strings.Contains(str(x["name"]), "ON ÷ its limit") && !math.IsNaN(measured(x, "limit")) {
			vsLimit.limits = append(vsLimit.limits, limit{"bar", measured(x, "limit"), "limit"})
			break
		}
	}
	modes.draw(b)
	vsLimit.draw(b)
	vsOff.draw(b)
	if len(trs) > 0 {
		header := []string{"query"}
		for _, i := range ran {
			header = append(header, largeModes[i].label)
		}
		header = append(header, "ON's depth", "device floor", "ON ÷ limit", "reads ceiling ÷ limit", "ON ÷ reads ceiling", "CPU ceiling ÷ limit", "ON/OFF", "ON ÷ best pool", "CPU µs/event ON", "CPU µs/event pool", "OFF time in state reads (bound)", "state MiB", "working set MiB", "output")
		table(b, header, trs)
	}
}
