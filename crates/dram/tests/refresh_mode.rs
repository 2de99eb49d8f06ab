//! DDR5 fine-granularity refresh as a per-run choice (`controller.refresh_mode`): the timing and
//! currents it resolves to, and the combinations it refuses, each naming the key at fault.
use movelab_dram::config::Config;
use movelab_dram::energy::CommandEnergy;

fn ddr5(mode: &str) -> Config {
    let mut cfg = Config::preset("DDR5-3200AN/DDR5-16Gb-x8").unwrap();
    cfg.controller.refresh_mode = mode.into();
    cfg
}

fn refusal(cfg: &Config) -> String {
    match cfg.resolve("test") {
        Ok(_) => panic!("the config was accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn fine_granularity_halves_the_interval_and_uses_trfc2_at_every_density() {
    // tRFC2 130 / 160 / 220 ns at 8 / 16 / 32 Gb (the presets' sources); DDR5-3200 tCK 625 ps.
    for (part, trfc1, trfc2) in [("8Gb", 195, 130), ("16Gb", 295, 160), ("32Gb", 410, 220)] {
        for speed in ["DDR5-3200AN", "DDR5-4800B", "DDR5-5600AN", "DDR5-6400B"] {
            let name = format!("{speed}/DDR5-{part}-x8");
            let mut cfg = Config::preset(&name).unwrap();
            let normal = cfg.resolve("test").unwrap();
            cfg.controller.refresh_mode = "fine-granularity".into();
            let fgr = cfg.resolve("test").unwrap();
            let tck = normal.t("tCK_ps") as f64;
            let clocks = |ns: u64| (ns as f64 * 1000.0 / tck).ceil() as u64;
            assert_eq!(normal.t("nRFC"), clocks(trfc1), "{name}");
            assert_eq!(fgr.t("nRFC"), clocks(trfc2), "{name}");
            assert_eq!(fgr.t("nRFM"), clocks(trfc2), "{name}: tRFM2 = tRFC2");
            assert_eq!(fgr.t("nREFI"), normal.t("nREFI") / 2, "{name}");
            assert_eq!(fgr.t("FGR"), 1);
            // RAAIMT / RAAMMT halved (32 / 96 -> 16 / 48).
            assert_eq!(
                [fgr.t("RAAIMT"), fgr.t("RAAMMT")],
                [normal.t("RAAIMT") / 2, normal.t("RAAMMT") / 2],
                "{name}"
            );
        }
    }
}

#[test]
fn the_default_mode_serialises_as_before() {
    let cfg = Config::preset("DDR5-3200AN/DDR5-16Gb-x8").unwrap();
    let text = toml::to_string(&cfg).unwrap();
    assert!(!text.contains("refresh_mode"), "{text}");
    let text = toml::to_string(&ddr5("fine-granularity")).unwrap();
    assert!(
        text.contains("refresh_mode = \"fine-granularity\""),
        "{text}"
    );
}

#[test]
fn refusals_name_the_key() {
    let e = refusal(&ddr5("fgr"));
    assert!(
        e.contains("controller.refresh_mode") && e.contains("'fgr' is not one of"),
        "{e}"
    );
    // A standard without fine-granularity refresh (no tRFC2 in its parts).
    for preset in ["DDR4-2400R/DDR4-8Gb-x8", "LPDDR5-6400/LPDDR5-8Gb-x16"] {
        let mut cfg = Config::preset(preset).unwrap();
        cfg.controller.refresh_mode = "fine-granularity".into();
        let e = refusal(&cfg);
        assert!(
            e.contains("controller.refresh_mode") && e.contains("tRFC2"),
            "{preset}: {e}"
        );
    }
    // Same-bank refresh with FGR is not modelled.
    let mut cfg = ddr5("fine-granularity");
    cfg.controller.refresh = "same-bank".into();
    let e = refusal(&cfg);
    assert!(
        e.contains("controller.refresh_mode") && e.contains("same-bank"),
        "{e}"
    );
    // The mode sets nRFC / nREFI / nRFM.
    for key in ["nRFC", "nREFI", "nRFM", "nRFC2"] {
        let mut cfg = ddr5("fine-granularity");
        cfg.dram.timing.insert(key.into(), 500);
        let e = refusal(&cfg);
        assert!(e.contains(&format!("dram.timing.{key}")), "{key}: {e}");
    }
    // With currents, FGR needs IDD5F.
    let mut cfg = ddr5("fine-granularity");
    cfg.dram.currents.insert("idd5f".into(), 0.0);
    let e = refusal(&cfg);
    assert!(
        e.contains("controller.refresh_mode") && e.contains("idd5f"),
        "{e}"
    );
}

#[test]
fn fine_granularity_ref_energy_uses_idd5f_over_trfc2() {
    // DRAMPower's DDR5 model: a REFab costs V (IDD5x - IDD3N) tRFC with IDD5B / tRFC1 in mode 1,
    // IDD5F / tRFC2 in mode 2 (VPP: IPP5B in mode 1; no public IPP5F, so none in mode 2).
    let n = ddr5("normal").resolve("test").unwrap();
    let f = ddr5("fine-granularity").resolve("test").unwrap();
    let c = &n.currents;
    assert!(c.idd5f > 0.0 && c.idd5f != c.idd5);
    let (en, ef) = (
        CommandEnergy::new(&n, 0.0, 1.0),
        CommandEnergy::new(&f, 0.0, 1.0),
    );
    let tck = n.t("tCK_ps") as f64 / 1000.0;
    let chips = n.org.chips_per_rank() as f64;
    let normal = chips
        * (c.vdd * (c.idd5 - c.idd3n) + c.vpp * (c.ipp5 - c.ipp3n))
        * n.t("nRFC") as f64
        * tck;
    let fgr = chips * c.vdd * (c.idd5f - c.idd3n) * f.t("nRFC") as f64 * tck;
    assert!(
        (en.refresh - normal).abs() < 1e-6 * normal,
        "{} vs {normal}",
        en.refresh
    );
    assert!(
        (ef.refresh - fgr).abs() < 1e-6 * fgr,
        "{} vs {fgr}",
        ef.refresh
    );
    // The other commands' energies do not depend on the mode.
    assert_eq!([en.act, en.read, en.write], [ef.act, ef.read, ef.write]);
}
