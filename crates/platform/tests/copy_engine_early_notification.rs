//! The off-die asynchronous engine's early notification (Zhao et al. section 5.3.2; section 6.4
//! beside Table 4: on the bus "the copy is globally observed when the request is placed on the
//! bus"). A copy that crosses a page is split into commands, each its own bus transaction (section
//! 5.1.3), so it is observed, and its `ecpy` retires, only once the last command's request has had
//! its address-phase turn. A core busy with work between copies (the engine idle most of the time)
//! takes that turn per copy on its critical path; a copy within a page does not.
use movelab_platform::config::workload::Workload;
use movelab_platform::{run, PlatformConfig};
use std::collections::BTreeMap;

/// Time (ns) of `n` ASYNC copies of 256 B, each followed by 3,000 instructions, whose destination
/// starts `dst_offset` bytes into its page.
fn time(dst_offset: u64, n: u64, over: &str) -> f64 {
    let text = format!(
        r#"
name = "ecpy-then-work"
description = "a small copy, then work"
iterations = "n"
seed = 1
[params]
n = {n}
[[regions]]
name = "src"
base = 0x1000_0000
size = "16MiB"
stride = 8192
[[regions]]
name = "dst"
base = {dst}
size = "16MiB"
stride = 8192
[[ops]]
kind = "copy"
src = {{ region = "src" }}
dst = {{ region = "dst" }}
bytes = 256
[[ops]]
kind = "compute"
n = 3000
"#,
        dst = 0x3000_0000u64 + dst_offset
    );
    let w = Workload::from_toml_str(&text, "test", &BTreeMap::new()).unwrap();
    let c = PlatformConfig::preset("zhao-uma-emc")
        .unwrap()
        .with_overrides(
            toml::from_str(&format!(
                "copy = {{ mechanism = \"ce\", mode = \"ASYNC\", placement = \"off-die\" }}\n{over}"
            ))
            .unwrap(),
            "test",
        )
        .unwrap();
    let s = run(&c, &w).unwrap();
    assert_eq!(s.offloads, n, "every copy went to the engine");
    s.time_ns
}

#[test]
fn a_copy_split_at_a_page_retires_after_its_last_request_is_on_the_bus() {
    let n = 40;
    for address_ns in [10.0, 30.0] {
        let over = format!("interconnect = {{ address_ns = {address_ns} }}");
        let within = time(0, n, &over);
        // 128 bytes before the page's end: two commands, two bus requests.
        let across = time(4096 - 128, n, &over);
        let per_copy = (across - within) / n as f64;
        println!("address turn {address_ns} ns: +{per_copy:.2} ns per split copy");
        assert!(
            per_copy > 0.8 * address_ns && per_copy < address_ns + 2.0,
            "a split copy's ecpy waits for its second request's address turn ({address_ns} ns): \
             {per_copy:.2} ns per copy"
        );
    }
}
