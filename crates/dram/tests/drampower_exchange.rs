//! DRAMPower exchange formats on their own (no DRAMPower needed): a command log written as a
//! DRAMPower trace reads back as the same commands; a device written as a DRAMPower memspec reads
//! back as overrides that, applied to another config, give the same organisation, timings and
//! currents; hand-written memspecs in DRAMPower's layout read as expected; bad input is refused
//! with the place named.
use movelab_dram::command::{CommandKind, CommandRecord, LogHeader, LogWriter};
use movelab_dram::command_log::{LogLine, LogReader};
use movelab_dram::config::Config;
use movelab_dram::drampower::memspec::{memspec_json, read_memspec};
use movelab_dram::drampower::trace::{read_trace, write_trace};
use movelab_dram::generator::GeneratorSpec;
use movelab_dram::request::TraceItem;
use movelab_dram::system::{log_header, simulate, RunOptions};

fn run(cfg: &Config, items: Vec<TraceItem>) -> (LogHeader, Vec<CommandRecord>, u64) {
    let spec = cfg.resolve("t").unwrap();
    let mut log: Vec<CommandRecord> = Vec::new();
    let s = simulate(
        cfg,
        items.into_iter().map(Ok),
        RunOptions {
            command_log: Some(&mut log),
            ..Default::default()
        },
    )
    .unwrap();
    (log_header(cfg, &spec), log, s.cycles)
}

/// The log as a file's text, through the log writer (IDLE-REF lines included).
fn log_text(header: &LogHeader, log: &[CommandRecord]) -> Vec<u8> {
    use movelab_dram::command::CommandSink;
    let mut w = LogWriter::new(Vec::new(), header).unwrap();
    for r in log {
        w.record(r);
    }
    w.finish().unwrap()
}

#[test]
fn a_log_reads_back_from_its_drampower_trace() {
    for preset in [
        "ddr4-2400r",
        "ddr5-4800b-sb",
        "lpddr5-6400",
        "ddr4-3200aa-2ch",
    ] {
        let cfg = Config::preset(preset).unwrap();
        let items: Vec<TraceItem> = GeneratorSpec::random(3000, 0.7, 5)
            .build()
            .unwrap()
            .collect();
        let (header, log, cycles) = run(&cfg, items);
        let text = log_text(&header, &log);
        let reader = LogReader::new(text.as_slice(), "mem").unwrap();
        let h = reader.header().clone();
        assert_eq!(h, header);
        let mut out = Vec::new();
        let sum = write_trace(&h, reader, 0, Some(cycles), &mut out).unwrap();
        let lines = read_trace(std::str::from_utf8(&out).unwrap()).unwrap();
        let mine: Vec<&CommandRecord> = log.iter().filter(|r| r.channel == 0).collect();
        assert_eq!(sum.commands as usize, mine.len(), "{preset}");
        assert_eq!(sum.other_channels as usize, log.len() - mine.len());
        assert_eq!(lines.len(), mine.len() + 1, "{preset}: commands and END");
        let end = lines.last().unwrap();
        assert_eq!((end.command.as_str(), end.cycle), ("END", cycles));
        let bpg = header.org.banks_per_group;
        let mut kinds = std::collections::BTreeSet::new();
        for (r, l) in mine.iter().zip(&lines) {
            kinds.insert(l.command.clone());
            assert_eq!(l.cycle, r.cycle);
            assert_eq!(
                (l.rank, l.bank_group, l.row, l.column),
                (r.rank, r.bank_group, r.row, r.column)
            );
            let want = match r.kind {
                CommandKind::Ref => "REFA",
                CommandKind::Refpb => "REFP2B",
                k => k.mnemonic(),
            };
            assert_eq!(l.command, want);
            if r.kind != CommandKind::Refsb {
                assert_eq!(l.bank, r.bank_group * bpg + r.bank);
            } else {
                assert_eq!(l.bank, r.bank);
            }
            let data = if r.kind.is_read() || r.kind.is_write() {
                header.org.line_bytes() as u32 * 8
            } else {
                0
            };
            assert_eq!(l.data_bits, data);
        }
        // The runs exercise activations, column commands and refresh.
        for k in ["ACT", "RD", "WR"] {
            assert!(kinds.contains(k), "{preset}: no {k} in {kinds:?}");
        }
        assert!(
            kinds.contains("REFA") || kinds.contains("REFSB") || kinds.contains("REFP2B"),
            "{preset}: no refresh in {kinds:?}"
        );
    }
}

#[test]
fn idle_refreshes_expand_and_rowclone_commands_are_refused() {
    let cfg = Config::preset("ddr4-2400r").unwrap();
    let header = log_header(&cfg, &cfg.resolve("t").unwrap());
    let lines = vec![
        Ok((
            LogLine::IdleRefresh {
                channel: 0,
                rank: 1,
                first: 100,
                count: 3,
                period: 50,
            },
            3,
        )),
        Ok((LogLine::Command(CommandRecord::refresh(300, 0, 0)), 4)),
    ];
    let mut out = Vec::new();
    let s = write_trace(&header, lines.into_iter(), 0, None, &mut out).unwrap();
    assert_eq!((s.commands, s.end), (4, 300));
    let text = String::from_utf8(out).unwrap();
    assert_eq!(
        text,
        "100,REFA,1,0,0,0,0\n150,REFA,1,0,0,0,0\n200,REFA,1,0,0,0,0\n300,REFA,0,0,0,0,0\n300,END,0,0,0,0,0\n"
    );
    // An END before the last command, a channel the device lacks, RowClone's ACTC.
    let one = || vec![Ok((LogLine::Command(CommandRecord::refresh(300, 0, 0)), 3))].into_iter();
    let e = write_trace(&header, one(), 0, Some(299), &mut Vec::new()).unwrap_err();
    assert!(e.to_string().contains("before the last command"), "{e}");
    let e = write_trace(&header, one(), 5, None, &mut Vec::new()).unwrap_err();
    assert!(e.to_string().contains("channel 5"), "{e}");
    let mut actc = CommandRecord::refresh(10, 0, 0);
    actc.kind = CommandKind::Actc;
    let e = write_trace(
        &header,
        vec![Ok((LogLine::Command(actc), 7))].into_iter(),
        0,
        None,
        &mut Vec::new(),
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("line 7") && e.to_string().contains("ACTC"),
        "{e}"
    );
    // Refresh management's RFM is named as such, with the setting that leaves it out.
    let mut rfm = CommandRecord::refresh(10, 0, 0);
    rfm.kind = CommandKind::Rfm;
    let e = write_trace(
        &header,
        vec![Ok((LogLine::Command(rfm), 9))].into_iter(),
        0,
        None,
        &mut Vec::new(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("line 9")
            && e.contains("refresh management")
            && e.contains("controller.rfm=false"),
        "{e}"
    );
}

#[test]
fn bad_drampower_traces_are_refused_with_the_line() {
    for (text, what) in [
        ("0,ACT,0,0,0,0\n", "at least 7 fields"),
        ("0,FOO,0,0,0,0,0\n", "unknown command"),
        ("0,ACT,0,0,0,0,0\n5,RD,0,0,0,0,0\n", "needs a data word"),
        ("5,WR,0,0,0,0,0,0x123\n", "hex digits"),
        ("x,ACT,0,0,0,0,0\n", "timestamp"),
    ] {
        let e = read_trace(text).unwrap_err().to_string();
        assert!(e.contains(what) && e.contains("line "), "{text:?}: {e}");
    }
}

/// Writes `from`'s device as a memspec, reads it back, and applies it to `onto` (another bin and
/// part): the organisation, the timings the memspec carries and the currents must be `from`'s.
fn memspec_round_trip(from: &Config, onto: &Config) {
    let spec = from.resolve("from").unwrap();
    let json = memspec_json(&spec, 0.5).unwrap();
    let text = serde_json::to_string_pretty(&json).unwrap();
    let m = read_memspec(&text, "mem.json").unwrap();
    assert_eq!(m.memory_type, spec.standard);
    let o = m.overrides();
    assert!(o.notes.is_empty(), "{:?}", o.notes);
    let got = onto
        .with_overrides(o.value.clone(), "memspec")
        .unwrap()
        .resolve("onto")
        .unwrap();
    let base = onto.resolve("onto").unwrap();
    assert_eq!(got.org.rows, spec.org.rows);
    assert_eq!(got.org.columns, spec.org.columns);
    assert_eq!(got.org.banks_per_rank(), spec.org.banks_per_rank());
    assert_eq!(got.org.bank_groups, spec.org.bank_groups);
    assert_eq!(got.org.ranks, spec.org.ranks);
    assert_eq!(got.org.channels, spec.org.channels);
    let mut moved = 0;
    for (k, _) in o
        .settings
        .iter()
        .filter(|(k, _)| k.starts_with("dram.timing."))
    {
        let name = k.trim_start_matches("dram.timing.");
        assert_eq!(got.t(name), spec.t(name), "{name}");
        moved += usize::from(base.t(name) != spec.t(name));
    }
    assert!(
        moved >= 5,
        "the two configs differ in too few timings for a test"
    );
    let (g, s) = (&got.currents, &spec.currents);
    for (a, b, name) in [
        (g.vdd, s.vdd, "vdd"),
        (g.idd0, s.idd0, "idd0"),
        (g.idd2n, s.idd2n, "idd2n"),
        (g.idd3n, s.idd3n, "idd3n"),
        (g.idd4r, s.idd4r, "idd4r"),
        (g.idd4w, s.idd4w, "idd4w"),
        (g.idd5, s.idd5, "idd5"),
        (g.idd5c, s.idd5c, "idd5c"),
        (g.vpp, s.vpp, "vpp"),
        (g.ipp0, s.ipp0, "ipp0"),
        (g.ipp2n, s.ipp2n, "ipp2n"),
        (g.ipp3n, s.ipp3n, "ipp3n"),
        (g.ipp4r, s.ipp4r, "ipp4r"),
        (g.ipp4w, s.ipp4w, "ipp4w"),
        (g.ipp5, s.ipp5, "ipp5"),
    ] {
        assert!(
            (a - b).abs() < 1e-9 * b.abs().max(1.0),
            "{name}: {a} vs {b}"
        );
    }
    let rho = onto
        .with_overrides(o.value, "memspec")
        .unwrap()
        .energy
        .bank_rho;
    assert_eq!(rho, 0.5);
}

#[test]
fn a_device_reads_back_from_its_memspec() {
    let with = |preset: &str, speed: &str, part: &str| {
        let mut c = Config::preset(preset).unwrap();
        c.dram.speed = speed.into();
        c.dram.part = part.into();
        c
    };
    memspec_round_trip(
        &with("ddr4-3200aa-2ch", "DDR4-3200AA", "DDR4-16Gb-x8"),
        &with("ddr4-2400r", "DDR4-2400R", "DDR4-4Gb-x8"),
    );
    memspec_round_trip(
        &with("ddr5-3200an", "DDR5-6400B", "DDR5-32Gb-x16"),
        &with("ddr5-3200an", "DDR5-3200AN", "DDR5-16Gb-x8"),
    );
    // Standards DRAMPower memspecs are not written for, and parts without currents.
    let hbm = Config::preset("hbm3-6400").unwrap().resolve("t").unwrap();
    assert!(memspec_json(&hbm, 0.5)
        .unwrap_err()
        .contains("DDR4, DDR5 and LPDDR5"));
    let lp = Config::preset("lpddr5-6400").unwrap().resolve("t").unwrap();
    assert!(memspec_json(&lp, 0.5).unwrap_err().contains("no currents"));
}

/// An LPDDR5 device with currents on all three supplies, written as a memspec and read back onto
/// another part: VDD1, VDD2H and VDD2L come back as movelab's VPP, VDD and VDD2L, with the
/// organisation and the timings; WCK:CK is 4:1 for BL16 and for BL32 (whose `nBL` has a gap).
#[test]
fn an_lpddr5_device_reads_back_from_its_memspec() {
    let currents: toml::Value =
        toml::from_str(include_str!("data/lpddr5-hypothetical-currents.toml")).unwrap();
    for preset in ["lpddr5-6400", "lpddr5-6400-bl32"] {
        let from = Config::preset(preset)
            .unwrap()
            .with_overrides(currents.clone(), "test")
            .unwrap();
        let spec = from.resolve("from").unwrap();
        let json = memspec_json(&spec, 0.5).unwrap();
        let ms = &json["memspec"];
        assert_eq!(ms["memtimingspec"]["WCK2CK"], 4, "{preset}");
        // tRBTP counts after the burst; movelab's nRTP is the whole read-to-precharge distance.
        let burst = spec.param("nBL_data").unwrap_or(spec.t("nBL"));
        assert_eq!(
            ms["memtimingspec"]["RBTP"],
            spec.t("nRTP") - burst,
            "{preset}"
        );
        assert_eq!(ms["memarchitecturespec"]["per2BankOffset"], 8, "{preset}");
        assert_eq!(ms["mempowerspec"]["vdd1"], 1.8);
        assert_eq!(ms["mempowerspec"]["idd02l"], 0.01);
        let m = read_memspec(&serde_json::to_string(&json).unwrap(), "mem.json").unwrap();
        let o = m.overrides();
        assert!(o.notes.is_empty(), "{:?}", o.notes);
        // nRTP comes back from tRBTP and the burst (the memspec has no RTP).
        assert!(
            o.settings
                .iter()
                .any(|(k, v)| k == "dram.timing.nRTP" && *v == spec.t("nRTP").to_string()),
            "{preset}: {:?}",
            o.settings
        );
        let mut onto = Config::preset(preset).unwrap();
        onto.dram.part = "LPDDR5-16Gb-x16".into();
        let got = onto
            .with_overrides(o.value, "memspec")
            .unwrap()
            .resolve("onto")
            .unwrap();
        assert!(got.energy_available);
        assert_eq!(got.org.rows, spec.org.rows);
        for k in [
            "nRFC", "nRFCpb", "nRAS", "nRCD", "nRP", "nRPab", "nCL", "nCWL", "nWR",
        ] {
            assert_eq!(got.t(k), spec.t(k), "{preset} {k}");
        }
        let (g, s) = (
            serde_json::to_value(&got.currents).unwrap(),
            serde_json::to_value(&spec.currents).unwrap(),
        );
        assert_eq!(g, s, "{preset}");
    }
}

/// A DDR5 memspec in DRAMPower's layout, written here (values made up for the test).
const DDR5_MEMSPEC: &str = r#"{
  "memspec": {
    "memoryId": "test-ddr5",
    "memoryType": "DDR5",
    "memarchitecturespec": { "nbrOfChannels": 1, "nbrOfColumns": 1024, "nbrOfRows": 65536,
      "width": 8, "burstLength": 16, "dataRate": 2, "nbrOfBankGroups": 8, "nbrOfBanks": 32,
      "nbrOfRanks": 2, "nbrOfDevices": 4, "RefMode": 1 },
    "mempowerspec": { "vdd": 1.1, "idd0": 0.1, "idd2n": 0.09, "idd3n": 0.14, "idd4r": 0.3,
      "idd4w": 0.33, "idd5b": 0.27, "idd5c": 0.13, "vpp": 1.8, "ipp0": 0.008, "ipp2n": 0.007,
      "ipp3n": 0.007, "ipp4r": 0.009, "ipp4w": 0.03, "ipp5b": 0.028, "ipp5c": 0.01,
      "vddq": 1.1, "iBeta_vdd": 0.09, "iBeta_vpp": 0.008 },
    "memtimingspec": { "tCK": 0.416e-9, "RAS": 77, "RCD": 39, "RP": 39, "RL": 40, "WL": 38,
      "RTP": 18, "WR": 72, "PPD": 0, "RFC1_slr": 708, "RFCsb_slr": 312, "REFI1": 9360,
      "CCD_L_slr": 12, "FAW_slr": 32 },
    "bankwisespec": { "factRho": 0.3 },
    "memimpedancespec": { "ck_termination": true, "ck_R_eq": 1e6 }
  }
}"#;

#[test]
fn a_drampower_layout_memspec_gives_these_overrides() {
    let m = read_memspec(DDR5_MEMSPEC, "t.json").unwrap();
    let o = m.overrides();
    let get = |k: &str| {
        o.settings
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(get("dram.timing.tCK_ps").as_deref(), Some("416"));
    assert_eq!(get("dram.timing.nRFC").as_deref(), Some("708"));
    assert_eq!(get("dram.timing.nRFCsb").as_deref(), Some("312"));
    assert_eq!(get("dram.timing.nCL").as_deref(), Some("40"));
    assert_eq!(get("dram.timing.nCWL").as_deref(), Some("38"));
    // A 0 is "not given".
    assert_eq!(get("dram.timing.nPPD"), None);
    assert_eq!(get("dram.org.banks").as_deref(), Some("32"));
    assert_eq!(get("dram.org.bank_groups").as_deref(), Some("8"));
    assert_eq!(get("dram.ranks").as_deref(), Some("2"));
    assert_eq!(get("dram.channels").as_deref(), Some("1"));
    assert_eq!(get("dram.currents.idd0").as_deref(), Some("100.0"));
    assert_eq!(get("dram.currents.idd5").as_deref(), Some("270.0"));
    assert_eq!(get("dram.currents.idd5c").as_deref(), Some("130.0"));
    assert_eq!(get("energy.bank_rho").as_deref(), Some("0.3"));
    // iBeta_vdd differs from idd0, and the timings the memspec leaves at 0 keep the config's
    // values: both said, not dropped silently.
    assert_eq!(o.notes.len(), 2, "{:?}", o.notes);
    assert!(o.notes.iter().any(|n| n.contains("iBeta_vdd")));
    assert!(
        o.notes
            .iter()
            .any(|n| n.contains("the config's stay") && n.contains("nPPD (PPD)")),
        "{:?}",
        o.notes
    );
    // Applied to the DDR5-4800B preset: a config movelab runs.
    let c = Config::preset("ddr5-4800b-sb")
        .unwrap()
        .with_overrides(o.value, "t.json")
        .unwrap();
    let s = c.resolve("t").unwrap();
    assert_eq!(
        (s.t("nRFC"), s.org.ranks, s.currents.idd4w),
        (708, 2, 330.0)
    );

    // LPDDR5: organisation, timings and each supply's currents (VDD1 as VPP, VDD2H as VDD; the
    // VDD2L supply without currents is left out).
    let lp = r#"{"memspec": {"memoryId": "lp", "memoryType": "LPDDR5",
      "memarchitecturespec": {"nbrOfColumns": 1024, "nbrOfRows": 32768, "width": 16,
        "nbrOfBankGroups": 4, "nbrOfBanks": 16, "nbrOfRanks": 1, "burstLength": 16},
      "mempowerspec": {"vdd1": 1.8, "idd01": 0.005, "idd2n1": 0.002, "idd3n1": 0.0025,
        "idd4r1": 0.003, "idd4w1": 0.003, "idd5pb1": 0.001, "vdd2h": 1.05, "idd02h": 0.05,
        "idd2n2h": 0.03, "idd3n2h": 0.038, "idd4r2h": 0.18, "idd4w2h": 0.16, "idd5pb2h": 0.03,
        "vdd2l": 0.9, "idd02l": 0, "iBeta_vdd2h": 0.04},
      "memtimingspec": {"tCK": 1.25e-9, "RCD": 15, "RPpb": 15, "RPab": 17, "RFCab": 168,
        "RFCpb": 96, "RAS": 34}}}"#;
    let o = read_memspec(lp, "lp.json").unwrap().overrides();
    let get = |k: &str| {
        o.settings
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(get("dram.currents.vpp").as_deref(), Some("1.8"));
    assert_eq!(get("dram.currents.ipp0").as_deref(), Some("5.0"));
    assert_eq!(get("dram.currents.vdd").as_deref(), Some("1.05"));
    assert_eq!(get("dram.currents.idd0").as_deref(), Some("50.0"));
    assert_eq!(get("dram.currents.idd5pb").as_deref(), Some("30.0"));
    assert_eq!(get("dram.currents.vdd2l"), None);
    assert_eq!(o.notes.len(), 2, "{:?}", o.notes);
    assert!(
        o.notes.iter().any(|n| n.contains("iBeta_vdd2h")),
        "{:?}",
        o.notes
    );
    // Neither RBTP nor RTP: nRTP stays the config's, and the notes say so.
    assert_eq!(get("dram.timing.nRTP"), None);
    assert!(
        o.notes
            .iter()
            .any(|n| n.contains("the config's stay") && n.contains("nRTP (RBTP")),
        "{:?}",
        o.notes
    );
    let c = Config::preset("lpddr5-6400")
        .unwrap()
        .with_overrides(o.value, "lp.json")
        .unwrap();
    let s = c.resolve("t").unwrap();
    assert_eq!((s.t("nRPab"), s.t("nRFC"), s.t("nRFCpb")), (17, 168, 96));
    assert!(s.energy_available);
    assert_eq!((s.currents.idd0, s.currents.ipp0), (50.0, 5.0));
    // With RBTP, WCK:CK 4 and BL16 (a 2-clock burst), nRTP is RBTP + 2.
    let rbtp = lp.replace("\"RAS\": 34", "\"RAS\": 34, \"RBTP\": 10, \"WCK2CK\": 4");
    let o = read_memspec(&rbtp, "rbtp.json").unwrap().overrides();
    assert!(
        o.settings
            .iter()
            .any(|(k, v)| k == "dram.timing.nRTP" && v == "12"),
        "{:?}",
        o.settings
    );
    // A supply with currents but no voltage is named, not dropped silently.
    let novolt = lp.replace("\"vdd2h\": 1.05,", "");
    let o = read_memspec(&novolt, "nv.json").unwrap().overrides();
    assert!(
        o.notes
            .iter()
            .any(|n| n.contains("VDD2H") && n.contains("no supply voltage")),
        "{:?}",
        o.notes
    );
    assert!(o.settings.iter().all(|(k, _)| k != "dram.currents.idd0"));
    // LPDDR4: movelab has no LPDDR4 energy model; its currents are named as not carried over.
    let lp4 = lp.replace("LPDDR5", "LPDDR4");
    let o = read_memspec(&lp4, "lp4.json").unwrap().overrides();
    assert!(
        o.notes.iter().any(|n| n.contains("LPDDR4")),
        "{:?}",
        o.notes
    );
    assert!(o
        .settings
        .iter()
        .all(|(k, _)| !k.starts_with("dram.currents")));
}

#[test]
fn bad_memspecs_are_refused_with_the_field() {
    let base: serde_json::Value = serde_json::from_str(DDR5_MEMSPEC).unwrap();
    let with = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut v = base.clone();
        f(&mut v);
        serde_json::to_string(&v).unwrap()
    };
    let cases: Vec<(String, &str)> = vec![
        ("not json".into(), "not valid JSON"),
        ("{}".into(), "no \"memspec\""),
        (
            with(&|v| v["memspec"]["memoryType"] = "GDDR9".into()),
            "memoryType 'GDDR9'",
        ),
        (
            with(&|v| v["memspec"]["memtimingspec"]["tCK"] = 0.into()),
            "memtimingspec.tCK",
        ),
        (
            with(&|v| v["memspec"]["memtimingspec"]["RAS"] = (-1).into()),
            "memtimingspec.RAS",
        ),
        (
            with(&|v| v["memspec"]["memarchitecturespec"]["nbrOfBanks"] = 0.into()),
            "nbrOfBanks",
        ),
        (
            with(&|v| v["memspec"]["mempowerspec"]["idd0"] = "high".into()),
            "mempowerspec.idd0",
        ),
        (
            with(&|v| v["memspec"]["bankwisespec"]["factRho"] = 2.into()),
            "factRho",
        ),
    ];
    for (text, what) in cases {
        let e = read_memspec(&text, "bad.json").unwrap_err();
        assert!(e.contains(what) && e.starts_with("bad.json"), "{what}: {e}");
    }
}

/// A memspec's channel count is carried over (it was dropped without a note), and a bad one is
/// refused by name.
#[test]
fn a_memspec_s_channel_count_is_carried_over_and_checked() {
    let two = DDR5_MEMSPEC.replace("\"nbrOfChannels\": 1", "\"nbrOfChannels\": 2");
    let o = read_memspec(&two, "t.json").unwrap().overrides();
    assert!(
        o.settings
            .contains(&("dram.channels".to_string(), "2".to_string())),
        "{:?}",
        o.settings
    );
    let c = Config::preset("ddr5-4800b-sb")
        .unwrap()
        .with_overrides(o.value, "t.json")
        .unwrap();
    assert_eq!(c.dram.channels, 2);
    let none = DDR5_MEMSPEC.replace("\"nbrOfChannels\": 1, ", "");
    let o = read_memspec(&none, "t.json").unwrap().overrides();
    assert!(
        !o.settings.iter().any(|(k, _)| k == "dram.channels"),
        "{:?}",
        o.settings
    );
    for bad in ["0", "1.5", "-2"] {
        let e = read_memspec(
            &DDR5_MEMSPEC.replace("\"nbrOfChannels\": 1", &format!("\"nbrOfChannels\": {bad}")),
            "t.json",
        )
        .unwrap_err();
        assert!(
            e.contains("memarchitecturespec.nbrOfChannels"),
            "{bad}: {e}"
        );
    }
}

/// A timing that is not a whole number of clocks below 2^32 is refused by name: 1.5 was rounded to
/// 2 without a word, and 2^70 became 0 (then refused as "must be positive").
#[test]
fn a_memspec_timing_must_be_whole_clocks() {
    for bad in ["1.5", "1180591620717411303424", "1e19", "4294967296"] {
        let text = DDR5_MEMSPEC.replace("\"RCD\": 39", &format!("\"RCD\": {bad}"));
        assert_ne!(text, DDR5_MEMSPEC);
        let e = read_memspec(&text, "t.json").unwrap_err();
        assert!(
            e.contains("memtimingspec.RCD") && e.contains("whole number"),
            "{bad}: {e}"
        );
    }
    assert!(read_memspec(
        &DDR5_MEMSPEC.replace("\"RCD\": 39", "\"RCD\": 39.0"),
        "t.json"
    )
    .is_ok());
}
