//! The NIC's receive descriptor write-back against the policy the 82598 datasheet states
//! (section 3.5.2.7, "Receive Descriptor Write-Back", and 4.4.3.5.6, RXDCTL): used descriptors
//! are written back once RXDCTL.WTHRESH of them are waiting (regardless of line alignment), and
//! when the interrupt moderation timer expires every used descriptor is written back before the
//! interrupt. At WTHRESH 1 (the register's reset value, which the ixgbe driver of 2010 left in
//! place on the receive queues) that is one 16 B write per received frame, at once.
use movelab_platform::config::io::IoConfig;
use movelab_platform::devices::nic::{rx_read_desc, Nic, NicOut, MSIX_ADDR, RDT};
use movelab_platform::pcie::bytes::Purpose;
use movelab_platform::pcie::link::{Tlp, TlpKind};
use movelab_platform::sim::{ns, Ps};

const TX_BASE: u64 = 0x1000_0000;
const RX_BASE: u64 = 0x1100_0000;
const BUFS: u64 = 0x3000_0000;
const BUF: u64 = 2048;

/// A NIC of the Fig. 10 preset with `wthresh`, its first `posted` RX descriptors fetched.
fn nic(wthresh: u32, posted: u32) -> Nic {
    let mut io = IoConfig::preset("larsen-82599-gen2").expect("preset");
    io.nic.rx_wthresh = wthresh;
    let mut nic = Nic::new(&io, TX_BASE, RX_BASE);
    let mut out = Vec::new();
    nic.mmio_write(0, RDT, &posted.to_le_bytes(), &mut out);
    // Answer every descriptor read with the RX read descriptors the driver posted.
    let mut reads: Vec<(u16, u64, u32)> = Vec::new();
    for o in &out {
        if let NicOut::Tlp(_, t) = o {
            if let TlpKind::Read { len, tag } = t.kind {
                assert_eq!(t.purpose, Purpose::Descriptor);
                reads.push((tag, t.addr, len));
            }
        }
    }
    assert!(
        !reads.is_empty(),
        "the tail write starts a descriptor fetch"
    );
    for (tag, addr, len) in reads {
        let first = (addr - RX_BASE) / 16;
        let data: Vec<u8> = (0..u64::from(len) / 16)
            .flat_map(|i| rx_read_desc(BUFS + (first + i) * BUF))
            .collect();
        let mut o = Vec::new();
        nic.completion(
            ns(1000.0),
            Tlp {
                kind: TlpKind::Completion { tag, last: true },
                addr,
                data,
                purpose: Purpose::Descriptor,
            },
            &mut o,
        );
    }
    nic
}

fn frame(i: u8) -> Vec<u8> {
    vec![i; 130]
}

/// The write-back TLPs among `out`: (time, ring index of the first descriptor, descriptors).
fn write_backs(out: &[NicOut]) -> Vec<(Ps, u64, usize)> {
    out.iter()
        .filter_map(|o| match o {
            NicOut::Tlp(at, t) if t.purpose == Purpose::WriteBack => {
                Some((*at, (t.addr - RX_BASE) / 16, t.data.len() / 16))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn at_wthresh_one_each_frame_is_written_back_at_once_as_one_descriptor() {
    let mut n = nic(1, 8);
    for i in 0..3u8 {
        let at = ns(2000.0 + 3000.0 * f64::from(i));
        let mut out = Vec::new();
        n.frame_in(at, frame(i), &mut out);
        let payload = out
            .iter()
            .filter(|o| matches!(o, NicOut::Tlp(_, t) if t.purpose == Purpose::Payload))
            .count();
        assert!(payload >= 1, "the frame is written to its buffer");
        assert_eq!(write_backs(&out), vec![(at, u64::from(i), 1)], "frame {i}");
    }
    assert_eq!(n.stats.rx_desc_written_back, 3);
}

/// The timers among `out`, earliest first.
fn timers(out: &[NicOut]) -> Vec<Ps> {
    let mut t: Vec<Ps> = out
        .iter()
        .filter_map(|o| match o {
            NicOut::Timer(t) => Some(*t),
            _ => None,
        })
        .collect();
    t.sort_unstable();
    t
}

fn msix_at(out: &[NicOut]) -> Option<usize> {
    out.iter()
        .position(|o| matches!(o, NicOut::Tlp(_, t) if t.addr == MSIX_ADDR))
}

/// The timer's outputs hold a write-back and then the MSI-X.
fn assert_written_back_before_the_interrupt(fired: &[NicOut]) {
    let wb = fired
        .iter()
        .position(|o| matches!(o, NicOut::Tlp(_, t) if t.purpose == Purpose::WriteBack));
    let irq = msix_at(fired);
    assert!(wb.is_some() && irq.is_some() && wb < irq, "{fired:?}");
}

#[test]
fn above_one_write_backs_wait_for_wthresh_and_the_timer_flushes_the_rest_first() {
    let mut n = nic(4, 12);
    // The first frame finds no interrupt in the moderation interval: the timer expires at once,
    // flushes its descriptor and interrupts.
    let mut out = Vec::new();
    n.frame_in(ns(2000.0), frame(0), &mut out);
    assert!(
        write_backs(&out).is_empty(),
        "one used descriptor waits below WTHRESH 4"
    );
    let first = timers(&out)[0];
    let mut fired = Vec::new();
    n.timer(first, &mut fired);
    assert_eq!(write_backs(&fired), vec![(first, 0, 1)]);
    assert_written_back_before_the_interrupt(&fired);
    // Within the next interval (50 us) write-backs wait for WTHRESH: four go out together,
    // whatever their alignment, and the interrupt waits for the timer.
    out.clear();
    for i in 1..4u8 {
        n.frame_in(ns(3000.0 + 100.0 * f64::from(i)), frame(i), &mut out);
    }
    assert!(
        write_backs(&out).is_empty(),
        "three used descriptors wait below WTHRESH 4"
    );
    n.frame_in(ns(3400.0), frame(4), &mut out);
    assert_eq!(write_backs(&out), vec![(ns(3400.0), 1, 4)]);
    assert_eq!(
        msix_at(&out),
        None,
        "the interrupt waits for the moderation timer"
    );
    out.clear();
    n.frame_in(ns(3500.0), frame(5), &mut out);
    n.frame_in(ns(3600.0), frame(6), &mut out);
    assert!(write_backs(&out).is_empty());
    // When the timer expires the two wait no longer: written back before the interrupt.
    let at = first + ns(itr_us() * 1000.0);
    let mut fired = Vec::new();
    n.timer(at, &mut fired);
    assert_eq!(write_backs(&fired), vec![(at, 5, 2)]);
    assert_written_back_before_the_interrupt(&fired);
    assert_eq!(n.stats.rx_desc_written_back, 7);
}

/// The preset's EITR interval (us): the timer expires that long after the last interrupt.
fn itr_us() -> f64 {
    IoConfig::preset("larsen-82599-gen2")
        .expect("preset")
        .nic
        .itr_us
}
