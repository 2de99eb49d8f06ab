//! DRAMPower's JSON memory specifications ("memspecs"), read into movelab config overrides and
//! written from a movelab device, so that both tools can be run on the same part.
//!
//! A memspec is `{"memspec": {"memoryId", "memoryType", "memarchitecturespec", "mempowerspec",
//! "memtimingspec", "bankwisespec", ...}}`: organisation per device (`nbrOfBanks` counts every bank
//! of the device, `nbrOfDevices` the devices of a rank), currents in A and supplies in V per domain,
//! timings in clocks of `tCK` (given in seconds), and the bank-wise factor `factRho`.
//!
//! Read ([`read_memspec`], [`MemSpec::overrides`]): DDR4, DDR5, LPDDR4 and LPDDR5 memspecs; the
//! organisation and timings become `dram.org.*`, `dram.ranks`, `dram.channels` (`nbrOfChannels`,
//! where given) and `dram.timing.*` overrides (each timing a whole number of clocks), DDR4 / DDR5 /
//! LPDDR5 currents `dram.currents.*` (mA), `factRho` `energy.bank_rho`. What movelab cannot take is
//! listed in the notes, not dropped silently: LPDDR4 currents (movelab has no LPDDR4), an `iBeta`
//! other than IDD0 (movelab's I_theta takes IBeta = IDD0), and the timings it does not give
//! (absent or 0), for which the config's values stay. LPDDR5's currents come per supply
//! (VDD1, VDD2H, VDD2L) and are kept as movelab's VPP, VDD and VDD2L ([`LPDDR5_DOMAINS`]).
//!
//! Written ([`memspec_json`]): DDR4, DDR5 and LPDDR5 devices with currents, with the fields of both the
//! DRAMUtils 1.1 reader (DRAMPower before 6.0) and DRAMPower 6's (the readers ignore keys they do
//! not know; every key either needs is there). Interface (I/O) parameters are written as zeros:
//! the comparison is of core energy.
use crate::spec::DramSpec;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// A memspec as read: its sections as numbers by DRAMPower's names.
#[derive(Debug, Clone, PartialEq)]
pub struct MemSpec {
    pub memory_id: String,
    /// `DDR4`, `DDR5`, `LPDDR4` or `LPDDR5`.
    pub memory_type: String,
    pub architecture: BTreeMap<String, f64>,
    pub power: BTreeMap<String, f64>,
    /// Timings in clocks, and `tCK` in seconds.
    pub timing: BTreeMap<String, f64>,
    pub fact_rho: Option<f64>,
}

/// A memspec timing (clocks) is below this.
const MAX_CLOCKS: f64 = 4_294_967_296.0;

/// The memory types [`read_memspec`] accepts.
pub const MEMORY_TYPES: &[&str] = &["DDR4", "DDR5", "LPDDR4", "LPDDR5"];

/// Reads a memspec's JSON text (`source` names it in errors).
pub fn read_memspec(text: &str, source: &str) -> Result<MemSpec, String> {
    let v: Value =
        serde_json::from_str(text).map_err(|e| format!("{source}: not valid JSON: {e}"))?;
    let m = v
        .get("memspec")
        .and_then(Value::as_object)
        .ok_or_else(|| format!("{source}: no \"memspec\" object at the top"))?;
    let string = |k: &str| -> Result<String, String> {
        m.get(k)
            .and_then(Value::as_str)
            .map(String::from)
            .ok_or_else(|| format!("{source}: memspec.{k}: missing or not a string"))
    };
    let memory_type = string("memoryType")?;
    if !MEMORY_TYPES.contains(&memory_type.as_str()) {
        return Err(format!(
            "{source}: memspec.memoryType '{memory_type}' is not supported (supported: {})",
            MEMORY_TYPES.join(", ")
        ));
    }
    let section = |k: &str| -> Result<BTreeMap<String, f64>, String> {
        let obj = m
            .get(k)
            .and_then(Value::as_object)
            .ok_or_else(|| format!("{source}: memspec.{k}: missing or not an object"))?;
        let mut out = BTreeMap::new();
        for (name, val) in obj {
            // Flags (e.g. the impedance section's terminations) are not numbers; skip them.
            if let Some(x) = val.as_f64() {
                if !x.is_finite() || x < 0.0 {
                    return Err(format!(
                        "{source}: memspec.{k}.{name} = {x}: must be a finite non-negative number"
                    ));
                }
                out.insert(name.clone(), x);
            } else if !val.is_boolean() && !val.is_null() {
                return Err(format!("{source}: memspec.{k}.{name}: not a number"));
            }
        }
        Ok(out)
    };
    let architecture = section("memarchitecturespec")?;
    let power = section("mempowerspec")?;
    let timing = section("memtimingspec")?;
    // Every timing movelab takes is a whole number of clocks that fits a config's timing (below
    // 2^32): a fraction was rounded without a word, and 2^64 or more became 0.
    let lpddr5_extra: &[&str] = &["RBTP", "WCK2CK"];
    for names in timing_map(&memory_type)
        .into_iter()
        .map(|(n, _)| n)
        .chain(std::iter::once(lpddr5_extra))
    {
        for n in names.iter() {
            if let Some(x) = timing.get(*n) {
                if x.fract() != 0.0 || *x >= MAX_CLOCKS {
                    return Err(format!(
                        "{source}: memspec.memtimingspec.{n} = {x}: not a whole number of clocks below {MAX_CLOCKS}"
                    ));
                }
            }
        }
    }
    let fact_rho = match m.get("bankwisespec") {
        None | Some(Value::Null) => None,
        Some(b) => match b.get("factRho") {
            None | Some(Value::Null) => None,
            Some(x) => {
                let r = x
                    .as_f64()
                    .filter(|r| (0.0..=1.0).contains(r))
                    .ok_or_else(|| {
                        format!("{source}: memspec.bankwisespec.factRho: a number from 0 to 1")
                    })?;
                Some(r)
            }
        },
    };
    for k in [
        "nbrOfBanks",
        "nbrOfRows",
        "nbrOfColumns",
        "width",
        "nbrOfRanks",
    ] {
        match architecture.get(k) {
            Some(x) if *x >= 1.0 && x.fract() == 0.0 => {}
            _ => {
                return Err(format!(
                    "{source}: memspec.memarchitecturespec.{k}: missing or not a positive integer"
                ))
            }
        }
    }
    // Optional (DRAMPower's own memspecs give it; a device alone need not).
    if let Some(x) = architecture.get("nbrOfChannels") {
        if !(*x >= 1.0 && x.fract() == 0.0) {
            return Err(format!(
                "{source}: memspec.memarchitecturespec.nbrOfChannels: not a positive integer"
            ));
        }
    }
    match timing.get("tCK") {
        Some(t) if *t > 0.0 && *t < 1e-6 => {}
        _ => {
            return Err(format!(
                "{source}: memspec.memtimingspec.tCK: missing, or not a clock period in seconds"
            ))
        }
    }
    Ok(MemSpec {
        memory_id: m
            .get("memoryId")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        memory_type,
        architecture,
        power,
        timing,
        fact_rho,
    })
}

/// The overrides a memspec gives a movelab config, and what it could not give.
#[derive(Debug, Clone, PartialEq)]
pub struct Overrides {
    /// `{dram: {org, ranks, timing, currents}, energy: {bank_rho}}`, for `Config::with_overrides`.
    pub value: toml::Value,
    /// The same as `key=value` lines, for `--set`.
    pub settings: Vec<(String, String)>,
    /// What was not carried over, and why.
    pub notes: Vec<String>,
}

/// DRAMPower timing names -> movelab's, per memory type. The first name present wins.
fn timing_map(memory_type: &str) -> Vec<(&'static [&'static str], &'static str)> {
    match memory_type {
        "DDR4" => vec![
            (&["RAS"], "nRAS"),
            (&["RC"], "nRC"),
            (&["RCD"], "nRCD"),
            (&["RL"], "nCL"),
            (&["WL"], "nCWL"),
            (&["RTP"], "nRTP"),
            (&["WR"], "nWR"),
            (&["RP"], "nRP"),
            (&["RFC1"], "nRFC"),
            (&["REFI"], "nREFI"),
            (&["CCD_S"], "nCCD_S"),
            (&["CCD_L"], "nCCD_L"),
            (&["FAW"], "nFAW"),
            (&["RRD_S"], "nRRD_S"),
            (&["RRD_L"], "nRRD_L"),
            (&["WTR_S"], "nWTR_S"),
            (&["WTR_L"], "nWTR_L"),
            (&["RTRS"], "nRTRS"),
        ],
        "DDR5" => vec![
            (&["RAS"], "nRAS"),
            (&["RCD"], "nRCD"),
            (&["RL"], "nCL"),
            (&["WL"], "nCWL"),
            (&["RTP"], "nRTP"),
            (&["WR"], "nWR"),
            (&["RP"], "nRP"),
            (&["PPD"], "nPPD"),
            (&["RFC1", "RFC1_slr"], "nRFC"),
            (&["RFCsb", "RFCsb_slr"], "nRFCsb"),
            (&["REFI1"], "nREFI"),
            (&["REFSBRD", "REFSBRD_slr"], "nREFSBRD"),
            (&["CCD_S_slr"], "nCCD_S"),
            (&["CCD_L_slr"], "nCCD_L"),
            (&["CCD_L_WR2_slr", "CCD_L_WR_slr"], "nCCD_L_WR"),
            (&["RRD_S_slr"], "nRRD_S"),
            (&["RRD_L_slr"], "nRRD_L"),
            (&["FAW_slr"], "nFAW"),
            (&["WTR_S"], "nWTR_S"),
            (&["WTR_L"], "nWTR_L"),
            (&["RTRS"], "nRTRS"),
        ],
        // LPDDR4 / LPDDR5
        _ => vec![
            (&["RAS"], "nRAS"),
            (&["RCD"], "nRCD"),
            (&["RL"], "nCL"),
            (&["WL"], "nCWL"),
            (&["RTP"], "nRTP"),
            (&["WR"], "nWR"),
            (&["RPpb"], "nRP"),
            (&["RPab"], "nRPab"),
            (&["PPD"], "nPPD"),
            (&["RFCab"], "nRFC"),
            (&["RFCpb"], "nRFCpb"),
            (&["REFI"], "nREFI"),
            (&["FAW"], "nFAW"),
            (&["RRD"], "nRRD"),
            (&["pbR2pbR"], "nPBR2PBR"),
        ],
    }
}

/// DRAMPower current names (A) -> movelab's (mA), DDR4 and DDR5.
fn current_map(memory_type: &str) -> Vec<(&'static str, &'static str)> {
    let mut v = vec![
        ("idd0", "idd0"),
        ("idd2n", "idd2n"),
        ("idd3n", "idd3n"),
        ("idd4r", "idd4r"),
        ("idd4w", "idd4w"),
        ("ipp0", "ipp0"),
        ("ipp2n", "ipp2n"),
        ("ipp3n", "ipp3n"),
        ("ipp4r", "ipp4r"),
        ("ipp4w", "ipp4w"),
    ];
    if memory_type == "DDR4" {
        v.extend([("idd5B", "idd5"), ("ipp5B", "ipp5")]);
    } else {
        v.extend([
            ("idd5b", "idd5"),
            ("ipp5b", "ipp5"),
            ("idd5c", "idd5c"),
            ("ipp5c", "ipp5c"),
        ]);
    }
    v
}

/// LPDDR5's supply domains in a DRAMPower memspec (the suffix of their names: `vdd1`, `idd01`,
/// ...) and where movelab keeps each: VDD1 as VPP (`vpp`, `ipp*`), VDD2H as VDD (`vdd`, `idd*`),
/// VDD2L as `vdd2l` (`idd*2l`); per domain, DRAMPower's current names (before the suffix) and
/// movelab's.
#[allow(clippy::type_complexity)]
const LPDDR5_DOMAINS: [(&str, &str, [(&str, &str); 7]); 3] = [
    (
        "1",
        "vpp",
        [
            ("idd0", "ipp0"),
            ("idd2n", "ipp2n"),
            ("idd3n", "ipp3n"),
            ("idd4r", "ipp4r"),
            ("idd4w", "ipp4w"),
            ("idd5", "ipp5"),
            ("idd5pb", "ipp5pb"),
        ],
    ),
    (
        "2h",
        "vdd",
        [
            ("idd0", "idd0"),
            ("idd2n", "idd2n"),
            ("idd3n", "idd3n"),
            ("idd4r", "idd4r"),
            ("idd4w", "idd4w"),
            ("idd5", "idd5"),
            ("idd5pb", "idd5pb"),
        ],
    ),
    (
        "2l",
        "vdd2l",
        [
            ("idd0", "idd02l"),
            ("idd2n", "idd2n2l"),
            ("idd3n", "idd3n2l"),
            ("idd4r", "idd4r2l"),
            ("idd4w", "idd4w2l"),
            ("idd5", "idd52l"),
            ("idd5pb", "idd5pb2l"),
        ],
    ),
];

impl MemSpec {
    /// The movelab overrides this memspec gives (see the module docs).
    pub fn overrides(&self) -> Overrides {
        let mut settings: Vec<(String, String)> = Vec::new();
        let mut notes = Vec::new();
        let a = |k: &str| self.architecture.get(k).copied().unwrap_or(0.0);
        let banks = a("nbrOfBanks") as u64;
        let groups = a("nbrOfBankGroups") as u64;
        settings.push(("dram.org.rows".into(), (a("nbrOfRows") as u64).to_string()));
        settings.push((
            "dram.org.columns".into(),
            (a("nbrOfColumns") as u64).to_string(),
        ));
        settings.push(("dram.org.banks".into(), banks.to_string()));
        if groups >= 1 {
            settings.push(("dram.org.bank_groups".into(), groups.to_string()));
        }
        settings.push(("dram.ranks".into(), (a("nbrOfRanks") as u64).to_string()));
        if let Some(c) = self.architecture.get("nbrOfChannels") {
            settings.push(("dram.channels".into(), (*c as u64).to_string()));
        }
        let tck_ps = (self.timing["tCK"] * 1e12).round() as u64;
        settings.push(("dram.timing.tCK_ps".into(), tck_ps.to_string()));
        // A 0 in a memspec means "not given" (DRAMPower's own test memspecs are full of them): the
        // config's value stays, and the notes say which.
        let mut kept = Vec::new();
        let lpddr5 = self.memory_type == "LPDDR5";
        if lpddr5 {
            // LPDDR5 counts tRBTP after the read's burst (BL / (2 WCK:CK) clocks); movelab's nRTP
            // is the read's whole distance to a precharge (the writer's inverse).
            let t = |k: &str| self.timing.get(k).copied().unwrap_or(0.0);
            let (rbtp, wck2ck, bl) = (t("RBTP"), t("WCK2CK"), a("burstLength"));
            if rbtp > 0.0 && wck2ck >= 1.0 && bl >= 1.0 {
                let burst = (bl / (2.0 * wck2ck)).round().max(1.0);
                settings.push((
                    "dram.timing.nRTP".into(),
                    ((rbtp + burst).round() as u64).to_string(),
                ));
            } else if t("RTP") > 0.0 {
                settings.push((
                    "dram.timing.nRTP".into(),
                    (t("RTP").round() as u64).to_string(),
                ));
            } else {
                kept.push("nRTP (RBTP with WCK2CK and burstLength, or RTP)".to_string());
            }
        }
        for (names, ours) in timing_map(&self.memory_type) {
            if lpddr5 && ours == "nRTP" {
                continue;
            }
            if let Some(x) = names
                .iter()
                .filter_map(|n| self.timing.get(*n))
                .find(|x| **x > 0.0)
            {
                settings.push((
                    format!("dram.timing.{ours}"),
                    (x.round() as u64).to_string(),
                ));
            } else {
                kept.push(format!("{ours} ({})", names.join(" / ")));
            }
        }
        if !kept.is_empty() {
            notes.push(format!(
                "timings the memspec does not give (absent, or 0 as DRAMPower writes one it does not use), so the config's stay: {}",
                kept.join(", ")
            ));
        }
        if self.memory_type.starts_with("DDR") {
            let p = |k: &str| self.power.get(k).copied();
            match p("vdd") {
                Some(v) if v > 0.0 => {
                    settings.push(("dram.currents.vdd".into(), fmt_f(v)));
                    if let Some(vpp) = p("vpp").filter(|x| *x > 0.0) {
                        settings.push(("dram.currents.vpp".into(), fmt_f(vpp)));
                    }
                    for (theirs, ours) in current_map(&self.memory_type) {
                        if let Some(x) = p(theirs) {
                            settings.push((format!("dram.currents.{ours}"), fmt_f(x * 1000.0)));
                        }
                    }
                    for (beta, idd) in [("iBeta_vdd", "idd0"), ("iBeta_vpp", "ipp0")] {
                        if let (Some(b), Some(i)) = (p(beta), p(idd)) {
                            if (b - i).abs() > 1e-12 {
                                notes.push(format!(
                                    "{beta} = {} mA differs from {idd} = {} mA: movelab takes IBeta = {idd}",
                                    fmt_f(b * 1000.0),
                                    fmt_f(i * 1000.0)
                                ));
                            }
                        }
                    }
                }
                _ => notes.push("no vdd in mempowerspec: currents not carried over".into()),
            }
        } else if self.memory_type == "LPDDR5" {
            let p = |k: &str| self.power.get(k).copied();
            let mut any = false;
            for (domain, v_ours, names) in LPDDR5_DOMAINS {
                let currents: Vec<(String, f64)> = names
                    .iter()
                    .filter_map(|(theirs, ours)| {
                        p(&format!("{theirs}{domain}")).map(|x| (ours.to_string(), x))
                    })
                    .collect();
                if currents.iter().all(|(_, x)| *x == 0.0) {
                    continue;
                }
                let Some(v) = p(&format!("vdd{domain}")).filter(|v| *v > 0.0) else {
                    notes.push(format!(
                        "VDD{} has currents but no supply voltage (vdd{domain}): its currents not carried over",
                        domain.to_uppercase()
                    ));
                    continue;
                };
                any = true;
                settings.push((format!("dram.currents.{v_ours}"), fmt_f(v)));
                for (ours, x) in currents {
                    settings.push((format!("dram.currents.{ours}"), fmt_f(x * 1000.0)));
                }
                let idd0 = p(&format!("idd0{domain}")).unwrap_or(0.0);
                if let Some(b) = p(&format!("iBeta_vdd{domain}")) {
                    if (b - idd0).abs() > 1e-12 {
                        notes.push(format!(
                            "iBeta_vdd{domain} = {} mA differs from idd0{domain} = {} mA: movelab takes IBeta = IDD0",
                            fmt_f(b * 1000.0),
                            fmt_f(idd0 * 1000.0)
                        ));
                    }
                }
            }
            if !any {
                notes.push(
                    "no LPDDR5 supply with currents in mempowerspec: currents not carried over"
                        .into(),
                );
            }
        } else {
            notes.push(format!(
                "{} currents: movelab does not model {} (no energy model for it): not carried over",
                self.memory_type, self.memory_type
            ));
        }
        if let Some(r) = self.fact_rho {
            settings.push(("energy.bank_rho".into(), fmt_f(r)));
        }
        // Build the nested table from the flat keys.
        let mut root = toml::map::Map::new();
        for (k, v) in &settings {
            let parts: Vec<&str> = k.split('.').collect();
            let mut t = &mut root;
            for p in &parts[..parts.len() - 1] {
                t = t
                    .entry(p.to_string())
                    .or_insert_with(|| toml::Value::Table(Default::default()))
                    .as_table_mut()
                    .expect("nested keys are tables");
            }
            let val = if k.starts_with("dram.currents.") || k == "energy.bank_rho" {
                toml::Value::Float(v.parse().unwrap_or(0.0))
            } else {
                toml::Value::Integer(v.parse::<i64>().unwrap_or(0))
            };
            t.insert(parts[parts.len() - 1].to_string(), val);
        }
        Overrides {
            value: toml::Value::Table(root),
            settings,
            notes,
        }
    }
}

fn fmt_f(x: f64) -> String {
    let s = format!("{x}");
    if s.contains('.') || s.contains('e') {
        s
    } else {
        format!("{s}.0")
    }
}

/// Writes `spec` (a DDR4 or DDR5 device with currents) as a DRAMPower memspec, with the bank-wise
/// factor `rho` (movelab's `energy.bank_rho`). Refused: other standards, a device without
/// currents.
pub fn memspec_json(spec: &DramSpec, rho: f64) -> Result<Value, String> {
    let std = spec.standard.as_str();
    if std != "DDR4" && std != "DDR5" && std != "LPDDR5" {
        return Err(format!(
            "DRAMPower memspecs are written for DDR4, DDR5 and LPDDR5 devices (this one is {std})"
        ));
    }
    if !spec.energy_available {
        return Err(format!(
            "part {} has no currents: a memspec without them computes no energy",
            spec.part
        ));
    }
    if std == "LPDDR5" {
        return Ok(lpddr5_memspec_json(spec, rho));
    }
    let o = &spec.org;
    let t = |k: &str| spec.param(k).unwrap_or(0);
    let c = &spec.currents;
    let a = |ma: f64| ma / 1000.0;
    let tck_s = spec.t("tCK_ps") as f64 * 1e-12;
    let mut arch = architecture_json(spec);
    arch["RefMode"] = json!(1);
    let mut timing = Map::new();
    let mut power = Map::new();
    let put = |m: &mut Map<String, Value>, k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    put(&mut timing, "tCK", json!(tck_s));
    if std == "DDR4" {
        for (k, v) in [
            ("RAS", t("nRAS")),
            ("RC", t("nRC")),
            ("RCD", t("nRCD")),
            ("RL", t("nCL")),
            ("RTP", t("nRTP")),
            ("WL", t("nCWL")),
            ("WR", t("nWR")),
            ("RP", t("nRP")),
            ("RFC1", t("nRFC")),
            ("REFI", t("nREFI")),
            ("CCD_S", t("nCCD_S")),
            ("CCD_L", t("nCCD_L")),
            ("FAW", t("nFAW")),
            ("RRD_S", t("nRRD_S")),
            ("RRD_L", t("nRRD_L")),
            ("WTR_S", t("nWTR_S")),
            ("WTR_L", t("nWTR_L")),
            ("RTRS", t("nRTRS")),
        ] {
            put(&mut timing, k, json!(v));
        }
        for k in [
            "CKE", "CKESR", "RPRE", "WPRE", "XP", "XS", "REFM", "RFC2", "RFC4", "DQSCK", "XPDLL",
            "XSDLL", "AL", "ACTPDEN", "PRPDEN", "REFPDEN",
        ] {
            put(&mut timing, k, json!(0));
        }
        for (k, v) in [
            ("idd5B", a(c.idd5)),
            ("ipp5B", a(c.ipp5)),
            ("idd5F2", a(c.idd5)),
            ("ipp5F2", a(c.ipp5)),
            ("idd5F4", a(c.idd5)),
            ("ipp5F4", a(c.ipp5)),
        ] {
            put(&mut power, k, json!(v));
        }
    } else {
        for (k, v) in [
            ("RAS", t("nRAS")),
            ("RCD", t("nRCD")),
            ("RTP", t("nRTP")),
            ("WL", t("nCWL")),
            ("WR", t("nWR")),
            ("RP", t("nRP")),
            ("PPD", t("nPPD")),
            ("RL", t("nCL")),
            ("RFC1", t("nRFC")),
            ("RFC1_slr", t("nRFC")),
            ("RFC2", t("nRFC")),
            ("RFC2_slr", t("nRFC")),
            ("RFCsb", t("nRFCsb")),
            ("RFCsb_slr", t("nRFCsb")),
            ("REFI1", t("nREFI")),
            ("REFSBRD_slr", t("nREFSBRD")),
            ("CCD_S_slr", t("nCCD_S")),
            ("CCD_L_slr", t("nCCD_L")),
            ("CCD_L_WR_slr", t("nCCD_L_WR")),
            ("CCD_L_WR2_slr", t("nCCD_L_WR")),
            ("RRD_S_slr", t("nRRD_S")),
            ("RRD_L_slr", t("nRRD_L")),
            ("FAW_slr", t("nFAW")),
            ("WTR_S", t("nWTR_S")),
            ("WTR_L", t("nWTR_L")),
            ("RTRS", t("nRTRS")),
        ] {
            put(&mut timing, k, json!(v));
        }
        for k in [
            "RPRE",
            "RPST",
            "RDDQS",
            "WPRE",
            "WPST",
            "CCD_M_slr",
            "CCD_M_WR_slr",
            "CCD_S_WR_slr",
            "CCD_dlr",
            "CCD_WR_dlr",
            "CCD_WR_dpr",
            "RRD_dlr",
            "FAW_dlr",
            "WTR_M",
            "RFC1_dlr",
            "RFC2_dlr",
            "RFC1_dpr",
            "RFC2_dpr",
            "RFCsb_dlr",
            "REFI2",
            "REFISB",
            "REFSBRD_dlr",
            "CPDED",
            "PD",
            "XP",
            "ACTPDEN",
            "PRPDEN",
            "REFPDEN",
        ] {
            put(&mut timing, k, json!(0));
        }
        for (k, v) in [
            ("idd5b", a(c.idd5)),
            ("ipp5b", a(c.ipp5)),
            ("idd5c", a(c.idd5c)),
            ("ipp5c", a(c.ipp5c)),
            ("idd5f", a(c.idd5)),
            ("ipp5f", a(c.ipp5)),
        ] {
            put(&mut power, k, json!(v));
        }
        if let Some(m) = arch.as_object_mut() {
            for k in [
                "nbrOfDIMMRanks",
                "nbrOfPhysicalRanks",
                "nbrOfLogicalRanks",
                "cmdMode",
                "RAAIMT",
                "RAAMMT",
                "RAADEC",
            ] {
                m.insert(k.into(), json!(0));
            }
            m.insert("nbrOfPhysicalRanks".into(), json!(o.ranks));
            m.insert("nbrOfLogicalRanks".into(), json!(1));
            m.insert("nbrOfDIMMRanks".into(), json!(o.ranks));
        }
    }
    for (k, v) in [
        ("vdd", c.vdd),
        ("idd0", a(c.idd0)),
        ("idd2n", a(c.idd2n)),
        ("idd3n", a(c.idd3n)),
        ("idd4r", a(c.idd4r)),
        ("idd4w", a(c.idd4w)),
        ("idd6n", 0.0),
        ("idd2p", 0.0),
        ("idd3p", 0.0),
        ("vpp", c.vpp),
        ("ipp0", a(c.ipp0)),
        ("ipp2n", a(c.ipp2n)),
        ("ipp3n", a(c.ipp3n)),
        ("ipp4r", a(c.ipp4r)),
        ("ipp4w", a(c.ipp4w)),
        ("ipp6n", 0.0),
        ("ipp2p", 0.0),
        ("ipp3p", 0.0),
        ("vddq", c.vdd),
        // movelab's I_theta takes IBeta = IDD0 (docs/dram.md, "Energy").
        ("iBeta_vdd", a(c.idd0)),
        ("iBeta_vpp", a(c.ipp0)),
    ] {
        put(&mut power, k, json!(v));
    }
    Ok(memspec_document(spec, arch, power, timing, rho))
}

/// The organisation of one device of `spec` in a memspec's `memarchitecturespec` (the keys every
/// standard's layout has).
fn architecture_json(spec: &DramSpec) -> Value {
    let o = &spec.org;
    json!({
        "nbrOfChannels": o.channels,
        "nbrOfDevices": o.chips_per_rank(),
        "nbrOfRanks": o.ranks,
        "nbrOfBanks": o.banks_per_rank(),
        "nbrOfBankGroups": o.bank_groups,
        "nbrOfRows": o.rows,
        "nbrOfColumns": o.columns,
        "burstLength": o.burst_length,
        "maxBurstLength": o.burst_length,
        "dataRate": 2,
        "width": o.device_width,
    })
}

/// The whole memspec around its architecture, power and timing sections, with zero interface
/// parameters (core energy is compared) under every reader's names.
fn memspec_document(
    spec: &DramSpec,
    arch: Value,
    power: Map<String, Value>,
    timing: Map<String, Value>,
    rho: f64,
) -> Value {
    let mut imp = Map::new();
    for k in [
        "C_total_ck",
        "C_total_wck",
        "R_eq_wck",
        "C_total_cb",
        "C_total_rb",
        "C_total_wb",
        "C_total_dqs",
        "R_eq_ck",
        "R_eq_cb",
        "R_eq_rb",
        "R_eq_wb",
        "R_eq_dqs",
    ] {
        imp.insert(k.into(), json!(0));
    }
    for sig in ["ck", "ca", "rdq", "wdq", "wdqs", "rdqs", "wdbi", "rdbi"] {
        imp.insert(format!("{sig}_termination"), json!(false));
        imp.insert(format!("{sig}_R_eq"), json!(1e6));
        imp.insert(format!("{sig}_dyn_E"), json!(0));
    }
    let mut pre = Map::new();
    for k in [
        "read_zeroes",
        "write_zeroes",
        "read_ones",
        "write_ones",
        "read_zeroes_to_ones",
        "write_zeroes_to_ones",
        "read_ones_to_zeroes",
        "write_ones_to_zeroes",
        "readMinTccd",
        "writeMinTccd",
    ] {
        pre.insert(k.into(), json!(0));
    }
    json!({
        "memspec": {
            "memoryId": format!("movelab {} {}", spec.speed, spec.part),
            "memoryType": spec.standard,
            "memarchitecturespec": arch,
            "mempowerspec": power,
            "memtimingspec": timing,
            "bankwisespec": { "factRho": rho },
            "memimpedancespec": imp,
            "prepostamble": pre,
            "dataratespec": { "ca_bus_rate": 2, "dq_bus_rate": 2, "dqs_bus_rate": 2 },
        }
    })
}

/// An LPDDR5 device as a memspec of DRAMUtils 1.1's LPDDR5 layout: VDD1 from movelab's VPP
/// currents, VDD2H from VDD's, VDD2L from `vdd2l`'s (see [`LPDDR5_DOMAINS`]); WCK:CK from the
/// burst (BL16 in `nBL` clocks of CK at double data rate); power-down and self-refresh currents
/// zero (not modelled).
fn lpddr5_memspec_json(spec: &DramSpec, rho: f64) -> Value {
    let o = &spec.org;
    let t = |k: &str| spec.param(k).unwrap_or(0);
    let tck_s = spec.t("tCK_ps") as f64 * 1e-12;
    // A burst of BL beats at double data rate lasts BL / (2 WCK:CK) clocks of CK.
    let burst = spec.param("nBL_data").unwrap_or(t("nBL")).max(1);
    let wck2ck = (u64::from(o.burst_length) / (2 * burst)).max(1);
    let per2bank = spec.refpb_pair_offset;
    let refipb =
        t("nREFI") / u64::from(o.banks_per_rank() / if per2bank > 0 { 2 } else { 1 }).max(1);
    let mut arch = architecture_json(spec);
    arch["per2BankOffset"] = json!(per2bank);
    arch["WCKalwaysOn"] = json!(true);
    let mut timing = Map::new();
    timing.insert("tCK".into(), json!(tck_s));
    for (k, v) in [
        ("REFI", t("nREFI")),
        ("REFIpb", refipb),
        ("RFCab", t("nRFC")),
        ("RFCpb", t("nRFCpb")),
        ("RAS", t("nRAS")),
        ("RPab", t("nRPab").max(t("nRP"))),
        ("RPpb", t("nRP")),
        ("RCpb", t("nRAS") + t("nRP")),
        ("RCab", t("nRAS") + t("nRPab").max(t("nRP"))),
        ("PPD", t("nPPD")),
        ("RCD", t("nRCD")),
        ("RCD_L", t("nRCD")),
        ("RCD_S", t("nRCD")),
        ("FAW", t("nFAW")),
        ("RRD", t("nRRD")),
        ("RL", t("nCL")),
        // movelab's nRTP is a read's whole distance to a precharge; LPDDR5 (and DRAMPower, which
        // closes an RDA's bank BL/n + tRBTP after it) counts tRBTP after the burst.
        ("RBTP", t("nRTP").saturating_sub(burst)),
        ("WL", t("nCWL")),
        ("WR", t("nWR")),
        ("RTRS", t("nRTRS")),
        ("WTR_L", t("nWTR_L")),
        ("WTR_S", t("nWTR_S")),
        ("WCK2DQO", 0),
        ("WCK2CK", wck2ck),
        ("pbR2act", t("nPBR2ACT")),
        ("pbR2pbR", t("nPBR2PBR")),
    ] {
        timing.insert(k.into(), json!(v));
    }
    for k in [
        "BL_n_min_16",
        "BL_n_max_16",
        "BL_n_L_16",
        "BL_n_S_16",
        "BL_n_min_32",
        "BL_n_max_32",
        "BL_n_L_32",
        "BL_n_S_32",
    ] {
        timing.insert(k.into(), json!(0));
    }
    // Each supply's currents by the names `LPDDR5_DOMAINS` gives them here and there (the zero
    // ones are left out of the serialised currents).
    let ours = serde_json::to_value(&spec.currents).unwrap_or_default();
    let ma = |name: &str| ours.get(name).and_then(Value::as_f64).unwrap_or(0.0);
    let mut power = Map::new();
    for (suffix, v_ours, names) in LPDDR5_DOMAINS {
        power.insert(format!("vdd{suffix}"), json!(ma(v_ours)));
        for (theirs, ours) in names {
            power.insert(format!("{theirs}{suffix}"), json!(ma(ours) / 1000.0));
        }
        for name in ["idd6", "idd6ds", "idd2p", "idd3p"] {
            power.insert(format!("{name}{suffix}"), json!(0.0));
        }
        // movelab's I_theta takes IBeta = IDD0 (docs/dram.md, "Energy").
        power.insert(format!("iBeta_vdd{suffix}"), json!(ma(names[0].1) / 1000.0));
    }
    power.insert("vddq".into(), json!(0.5));
    memspec_document(spec, arch, power, timing, rho)
}
