//! Where guest time comes from ([`ClockMode`]): the deterministic virtual clock (instruction
//! slots, [`crate::INSNS_PER_TICK`] per tick) or the host's monotonic clock ([`HostClock`]).

use std::time::{Duration, Instant};

/// A guest clock that follows the host's monotonic clock (`CLOCK_MONOTONIC` on Linux, through
/// [`Instant`]), in ticks of [`crate::TIMEBASE_HZ`]: [`HostClock::ticks`] is `base` when the
/// clock is made and then advances with the host's time, never backward. Copies share the
/// origin, so every hart of a VM given a copy reads the same time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostClock {
    origin: Instant,
    base: u64,
}

const NANOS: u128 = 1_000_000_000;

impl HostClock {
    /// A clock that reads `base` ticks now.
    pub fn starting_at(base: u64) -> HostClock {
        HostClock {
            origin: Instant::now(),
            base,
        }
    }

    /// The time now, in ticks of [`crate::TIMEBASE_HZ`] (one read of the host clock).
    #[inline]
    pub fn ticks(&self) -> u64 {
        let ns = self.origin.elapsed().as_nanos();
        let ticks = ns * crate::TIMEBASE_HZ as u128 / NANOS;
        self.base.wrapping_add(ticks as u64)
    }

    /// How long `ticks` ticks last on the host (saturating at `u64::MAX` nanoseconds).
    pub fn duration_of(ticks: u64) -> Duration {
        let ns = ticks as u128 * NANOS / crate::TIMEBASE_HZ as u128;
        Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }
}

/// Where a hart's `time`/`mtime` comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClockMode {
    /// Virtual time: `mtime` counts instruction slots ([`crate::INSNS_PER_TICK`] per tick) and
    /// an idle wait skips to the next timer deadline. Deterministic: the same guest sees the
    /// same times on any host, at any load.
    #[default]
    Virtual,
    /// Host time: `mtime` follows [`HostClock`] (read at chunk boundaries) and an idle wait
    /// sleeps on the host until the deadline. Instruction counters stay instruction-driven.
    Host,
}

impl ClockMode {
    /// The flag's spelling: `virtual` or `host`.
    pub fn name(self) -> &'static str {
        match self {
            ClockMode::Virtual => "virtual",
            ClockMode::Host => "host",
        }
    }
}

impl std::str::FromStr for ClockMode {
    type Err = String;
    fn from_str(s: &str) -> Result<ClockMode, String> {
        match s {
            "virtual" => Ok(ClockMode::Virtual),
            "host" => Ok(ClockMode::Host),
            _ => Err(format!("`{s}` is not a clock: host or virtual")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_clock_starts_at_its_base_and_advances() {
        let c = HostClock::starting_at(1_000);
        let a = c.ticks();
        assert!(a >= 1_000);
        std::thread::sleep(Duration::from_millis(2));
        let b = c.ticks();
        // 2 ms is 20_000 ticks at 10 MHz.
        assert!(b >= a + 20_000, "{a} {b}");
    }

    #[test]
    fn durations_and_names() {
        assert_eq!(HostClock::duration_of(10_000_000), Duration::from_secs(1));
        assert_eq!(HostClock::duration_of(10), Duration::from_micros(1));
        assert!(HostClock::duration_of(u64::MAX) > Duration::from_secs(1 << 33));
        assert_eq!("host".parse::<ClockMode>(), Ok(ClockMode::Host));
        assert_eq!("virtual".parse::<ClockMode>(), Ok(ClockMode::Virtual));
        assert!("wall"
            .parse::<ClockMode>()
            .unwrap_err()
            .contains("host or virtual"));
        assert_eq!(ClockMode::Host.name(), "host");
    }
}
