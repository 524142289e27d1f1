//! `vmm run` boots Debian's unmodified riscv64 Linux kernel (whichever suite the kit comes
//! from: trixie's 6.12 or a newer one, 7.x from forky or sid) with a busybox initramfs,
//! in-process (`vmm::run::run_kernel`), console captured.
//!
//! The kernel and initramfs come from `scripts/linux-guest.sh -q` (see there): the first
//! run downloads them with apt, which needs root and Debian's package mirrors (CI runs as
//! root with the mirrors reachable); later runs use the cache
//! (`$LINUX_GUEST_DIR`, default `~/.cache/riscv-ctr-vmm/linux-guest`). If the script fails,
//! the tests fail with its message: they are never skipped.
//!
//! Each boot takes about 1.3-1.4 billion guest instructions with 6.12, 1.1 billion with 7.2
//! (about 4-12 s in a release build);
//! the budget of [`LINUX_BUDGET`] ends a hung guest with `BudgetExhausted` and its console
//! output.

use vmm::run::fdt::{AIA_EXTENSIONS, ISA_EXTENSIONS, MMU_TYPE, PMU_EXTENSIONS, SSTC_EXTENSIONS};
use vmm::run::{RunConfig, RunExit, RunStats};
use vmm::sbi::srst::{ResetRequest, ResetType};
use vmm_tests::linux_kit::{self, linux_guest};

/// Instruction budget of one boot (a boot to power-off needs about 1.1e9-1.4e9), per vCPU
/// for one vCPU; an SMP boot gives each vCPU this times the vCPU count ([`boot_config`]).
const LINUX_BUDGET: u64 = 4_000_000_000;

/// Guest RAM in MiB. Linux 7.2 (Debian's config) reserves 128 MiB for CMA once RAM allows
/// it, which leaves about 50 MiB available with 256 (it panics with 176 to 208).
const LINUX_MEMORY_MIB: u64 = 256;

/// The kernel command line before `vmmcmd=`.
const BASE_CMDLINE: &str = "console=ttyS0 earlycon=sbi panic=-1";

/// What an extension implies by the specifications, one step (the closure is taken in
/// [`implied_closure`]). Linux reports, besides what the device tree lists, the extensions
/// it derives from a "superset" one (`riscv_isa_ext[]` in arch/riscv/kernel/cpufeature.c,
/// 6.11 on); each derivation below is one the specifications state:
///
/// - `a`: "The A extension comprises instructions provided by the Zaamo and Zalrsc
///   extensions" (RISC-V Unprivileged ISA 20240411, chapter '"A" Extension for Atomic
///   Instructions'); Linux 7.x reports both.
/// - `c`: "The C extension is the superset of the following extensions: Zca, Zcf if F is
///   specified (RV32 only), Zcd if D is specified" (Unprivileged ISA 20240411, chapter
///   "Zc* Extension for Code Size Reduction", section "C"): `zca` here, `zcd` with `d` in
///   [`implied_closure`], `zcf` only on RV32, so never for this RV64 hart.
/// - `d`: "The D extension depends on the base single-precision instruction subset F"
///   (chapter '"D" Extension for Double-Precision Floating-Point').
/// - `f`: "the F extension depends on the Zicsr extension" (chapter '"F" Extension for
///   Single-Precision Floating-Point').
/// - `m`: "The Zmmul extension implements the multiplication subset of the M extension"
///   (chapter '"M" Extension for Integer Multiplication and Division', section Zmmul).
/// - `zicntr`, `zihpm`: the counters are CSRs read with Zicsr's instructions; both
///   "depend on the Zicsr extension" (chapter "Counters").
const IMPLIES: &[(&str, &[&str])] = &[
    ("a", &["zaamo", "zalrsc"]),
    ("c", &["zca"]),
    ("d", &["f"]),
    ("f", &["zicsr"]),
    ("m", &["zmmul"]),
    ("zicntr", &["zicsr"]),
    ("zihpm", &["zicsr"]),
];

/// `exts` and everything they imply ([`IMPLIES`], and Zcd from C with D).
fn implied_closure(exts: &[&str]) -> Vec<String> {
    let mut all: Vec<String> = exts.iter().map(|e| e.to_string()).collect();
    loop {
        let has = |e: &str| all.iter().any(|x| x == e);
        let mut new: Vec<&str> = IMPLIES
            .iter()
            .filter(|(e, _)| has(e))
            .flat_map(|(_, implied)| implied.iter().copied())
            .filter(|i| !has(i))
            .collect();
        if has("c") && has("d") && !has("zcd") {
            new.push("zcd");
        }
        if new.is_empty() {
            return all;
        }
        all.extend(new.into_iter().map(str::to_string));
        all.sort();
        all.dedup();
    }
}

/// The extensions of a `/proc/cpuinfo` isa string `rv64<letters>[_<name>]*`: each single
/// letter, then each multi-letter name. Panics on another base.
fn isa_extensions(isa: &str) -> Vec<String> {
    let rest = isa
        .strip_prefix("rv64")
        .unwrap_or_else(|| panic!("isa {isa:?} does not start with rv64"));
    let mut parts = rest.split('_');
    let letters = parts.next().unwrap_or("");
    assert!(
        letters.chars().all(|c| c.is_ascii_lowercase()),
        "isa {isa:?}"
    );
    letters
        .chars()
        .map(String::from)
        .chain(parts.map(str::to_string))
        .collect()
}

/// Checks an isa line of `/proc/cpuinfo` against the device tree's extensions `dt`: every
/// one of them is reported (Linux names every extension of this device tree: the single
/// letters, Zicntr, Zicsr, Zifencei, Zihpm and Sscofpmf are all in its table since 6.x,
/// so no exception is needed), and every extension reported is in the device tree or
/// implied by what is ([`implied_closure`]): an extension that nothing in the device tree
/// implies fails.
fn check_isa_line(key: &str, isa: &str, dt: &[&str]) {
    let reported = isa_extensions(isa);
    for ext in dt {
        assert!(
            reported.iter().any(|r| r == ext),
            "{key} {isa}: lacks {ext} of the device tree {dt:?}"
        );
    }
    let allowed = implied_closure(dt);
    for ext in &reported {
        assert!(
            allowed.contains(ext),
            "{key} {isa}: {ext} is neither in the device tree {dt:?} nor implied by it \
             ({allowed:?})"
        );
    }
    // Single letters as in the device tree's canonical order (the kernel prints them so).
    let single: String = dt.iter().filter(|e| e.len() == 1).copied().collect();
    assert!(
        isa.starts_with(&format!("rv64{single}")),
        "{key} {isa}: not rv64{single}"
    );
}

#[test]
fn isa_implications() {
    let dt: Vec<&str> = ISA_EXTENSIONS
        .iter()
        .chain(PMU_EXTENSIONS)
        .copied()
        .collect();
    let all = implied_closure(&dt);
    for e in [
        "zaamo", "zalrsc", "zca", "zcd", "zmmul", "zicsr", "sscofpmf",
    ] {
        assert!(all.iter().any(|x| x == e), "{e} not in {all:?}");
    }
    // Zcf is RV32 only; nothing here implies vector, bit manipulation or Zcb.
    for e in ["zcf", "v", "zba", "zbb", "zcb", "h", "sstc"] {
        assert!(!all.iter().any(|x| x == e), "{e} in {all:?}");
    }
    // What Linux 7.2 prints for this device tree passes; an extra extension fails.
    let linux72 = "rv64imafdc_zicntr_zicsr_zifencei_zihpm_zaamo_zalrsc_zca_zcd_sscofpmf";
    check_isa_line("isa", linux72, &dt);
    let extra = format!("{linux72}_zba");
    assert!(std::panic::catch_unwind(|| check_isa_line("isa", &extra, &dt)).is_err());
    let missing = linux72.replace("_zihpm", "");
    assert!(std::panic::catch_unwind(|| check_isa_line("isa", &missing, &dt)).is_err());
    let zcf = format!("{linux72}_zcf");
    assert!(std::panic::catch_unwind(|| check_isa_line("isa", &zcf, &dt)).is_err());
}

/// Boots the Linux guest with `vmmcmd` as its workload; returns how the run ended, its
/// statistics and the console output with `\r\n` turned into `\n`.
fn boot(vmmcmd: &str) -> (RunExit, RunStats, String) {
    boot_vcpus(vmmcmd, 1, None)
}

/// [`boot`] with `vcpus` vCPUs on `pcpus` hart instances (`None`: one each).
fn boot_vcpus(vmmcmd: &str, vcpus: u64, pcpus: Option<u64>) -> (RunExit, RunStats, String) {
    boot_config(vmmcmd, vcpus, pcpus, true)
}

/// [`boot_vcpus`] with `--sstc` as `sstc`.
fn boot_config(
    vmmcmd: &str,
    vcpus: u64,
    pcpus: Option<u64>,
    sstc: bool,
) -> (RunExit, RunStats, String) {
    let guest = linux_guest();
    let mut config = RunConfig::new(&guest.kernel);
    config.initrd = Some(guest.initrd.clone());
    config.cmdline = format!("{BASE_CMDLINE} vmmcmd=\"{vmmcmd}\"");
    config.memory_mib = LINUX_MEMORY_MIB;
    // A vCPU waiting for one whose host thread is not running (more vCPUs than this
    // host's cores) spins in the kernel's cpu_relax() loops meanwhile: 2.1 G to 8.2 G
    // instructions in all for the same 4-vCPU boot on a 2-core host, more while other
    // tests run; a hung guest still ends at the budget.
    config.max_insns = Some(LINUX_BUDGET * vcpus);
    config.vcpus = vcpus;
    config.pcpus = pcpus;
    config.sstc = sstc;
    let (exit, stats, text) = linux_kit::boot(&config);
    eprintln!(
        "linux boot ({}): {exit:?}, {} instructions in {:.1} s ({:.0} MIPS)",
        config.cmdline,
        stats.instructions,
        stats.wall.as_secs_f64(),
        stats.mips()
    );
    (exit, stats, text)
}

/// The value of the first `/proc/cpuinfo` line `key<tabs>: value`.
fn cpuinfo<'a>(out: &'a str, key: &str) -> Option<&'a str> {
    out.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim_end() == key).then(|| v.trim())
    })
}

/// Byte offset of `needle` in `out`, with the console output in the message if missing.
fn find(out: &str, needle: &str) -> usize {
    out.find(needle)
        .unwrap_or_else(|| panic!("no {needle:?} on the console:\n{out}"))
}

#[test]
fn linux_boots_runs_a_command_and_powers_off() {
    let (exit, stats, out) =
        boot("cat /proc/cpuinfo; busybox uname -a; echo 6*7=$((6*7)); echo done");

    // The order of events: init is up, the workload ran, it exited with 0.
    let ready = find(&out, "\nVMM-GUEST-READY\n");
    let cpu = find(&out, "\nprocessor\t: 0\n");
    let answer = find(&out, "\n6*7=42\n");
    let done = find(&out, "\ndone\n");
    let status = find(&out, "\nVMM-GUEST-EXIT 0\n");
    assert!(
        ready < cpu && cpu < answer && answer < done && done < status,
        "console output out of order:\n{out}"
    );
    assert!(out[status..].contains("reboot: Power down"), "{out}");

    // /proc/cpuinfo shows what the device tree promises: one hart, RV64IMAFDC and the
    // listed multi-letter extensions (nothing else but what they imply), and the MMU type.
    let cpuinfo_text = &out[cpu..answer];
    assert_eq!(cpuinfo(cpuinfo_text, "processor"), Some("0"), "{out}");
    assert!(
        !cpuinfo_text.contains("\nprocessor\t: 1\n"),
        "one hart: {cpuinfo_text}"
    );
    assert_eq!(cpuinfo(cpuinfo_text, "hart"), Some("0"), "{cpuinfo_text}");
    // With Sstc and the PMU (the defaults): Sstc, Zihpm and Sscofpmf too. Linux 7.x also
    // prints a "hart isa" line (what this hart has, the "isa" line being what all harts
    // have).
    let dt: Vec<&str> = ISA_EXTENSIONS
        .iter()
        .chain(SSTC_EXTENSIONS)
        .chain(PMU_EXTENSIONS)
        .copied()
        .collect();
    let isa = cpuinfo(cpuinfo_text, "isa")
        .unwrap_or_else(|| panic!("no isa line in /proc/cpuinfo:\n{cpuinfo_text}"));
    check_isa_line("isa", isa, &dt);
    if let Some(hart_isa) = cpuinfo(cpuinfo_text, "hart isa") {
        check_isa_line("hart isa", hart_isa, &dt);
    }
    let mmu = MMU_TYPE.strip_prefix("riscv,").unwrap();
    assert_eq!(cpuinfo(cpuinfo_text, "mmu"), Some(mmu), "{cpuinfo_text}");

    // busybox uname -a: the Debian kernel on riscv64.
    let uname = out[cpu..answer]
        .lines()
        .find(|l| l.starts_with("Linux "))
        .unwrap_or_else(|| panic!("no uname line:\n{out}"));
    // The kit's kernel: its release, 6.12 or later.
    let guest = linux_guest();
    let release = uname.split_whitespace().nth(2).unwrap_or("");
    assert_eq!(
        release, guest.kernel_release,
        "{uname}: not the kernel of the {} kit",
        guest.suite
    );
    let version: Vec<u64> = release
        .split(|c: char| !c.is_ascii_digit())
        .take(2)
        .map(|n| n.parse().unwrap_or(0))
        .collect();
    assert!(version >= vec![6, 12], "{uname}");
    assert!(uname.ends_with(" riscv64 GNU/Linux"), "{uname}");

    // A clean power-off: SBI SRST shutdown with no reason.
    assert_eq!(
        exit,
        RunExit::Reset(ResetRequest {
            kind: ResetType::Shutdown,
            reason: 0
        }),
        "{out}"
    );
    assert_eq!(exit.exit_code(), 0);
    assert!(exit.is_clean_shutdown());
    assert!(stats.instructions < LINUX_BUDGET);
    assert_eq!(stats.exits.get("sbi SRST"), 1, "{}", stats.exits.table());
    // Sstc (the default): the kernel's timer is its stimecmp (the hart's vstimecmp), never
    // an SBI TIME call.
    assert_eq!(stats.exits.get("sbi TIME"), 0, "{}", stats.exits.table());

    // The riscv_pmu_sbi driver probes the SBI PMU extension (pmu-virt): every counter, no
    // snapshot shared memory (`--pmu-snapshot` is off by default), and (Sscofpmf in the
    // device tree) no complaint about sampling.
    assert!(
        out.contains("riscv-pmu-sbi: SBI PMU extension is available"),
        "{out}"
    );
    assert!(
        out.contains("riscv-pmu-sbi: 16 firmware and 31 hardware counters"),
        "{out}"
    );
    assert!(!out.contains("SBI PMU snapshot detected"), "{out}");
    assert!(!out.contains("sampling"), "{out}");
    assert!(stats.exits.get("sbi PMU") > 40, "{}", stats.exits.table());
}

#[test]
fn linux_boots_with_sstc_off_on_sbi_time() {
    // --sstc off: no sstc in the device tree, so the kernel's timer is the SBI TIME
    // extension (an exit per timer event), and /proc/cpuinfo does not list Sstc.
    let (exit, stats, out) = boot_config("cat /proc/cpuinfo; sleep 1; echo done", 1, None, false);
    let ready = find(&out, "\nVMM-GUEST-READY\n");
    let done = find(&out, "\ndone\n");
    assert!(exit.is_clean_shutdown(), "{exit:?}\n{out}");
    let isa = cpuinfo(&out[ready..done], "isa").unwrap_or_else(|| panic!("no isa line:\n{out}"));
    assert!(!isa.contains("sstc"), "{isa}");
    assert!(stats.exits.get("sbi TIME") > 0, "{}", stats.exits.table());
}

#[test]
fn linux_panic_is_a_reboot_and_a_failure() {
    // With panic=-1 the kernel reboots at once after a panic (SBI SRST cold reboot, reason
    // "no reason"), which vmm reports as a failure, not as a clean power-off.
    let (exit, _, out) = boot("echo c > /proc/sysrq-trigger");
    let ready = find(&out, "\nVMM-GUEST-READY\n");
    let panic = find(&out, "Kernel panic - not syncing: sysrq triggered crash");
    assert!(ready < panic, "{out}");
    assert!(!out.contains("VMM-GUEST-EXIT"), "{out}");
    assert_eq!(
        exit,
        RunExit::Reset(ResetRequest {
            kind: ResetType::ColdReboot,
            reason: 0
        }),
        "{out}"
    );
    assert_eq!(exit.exit_code(), 3);
    assert!(!exit.is_clean_shutdown());
    let message = exit.failure_message().unwrap();
    assert!(
        message.starts_with("guest requested a reboot (reason 0): ")
            && message.contains("treated as failure"),
        "{message}"
    );
}

/// SMP: Linux brings up every hart through SBI HSM and reports them all online.
fn linux_smp_boot(vcpus: u64, pcpus: Option<u64>) -> RunStats {
    let (exit, stats, out) = boot_vcpus(
        "cat /proc/cpuinfo; cat /sys/devices/system/cpu/online; nproc; echo done",
        vcpus,
        pcpus,
    );
    let last = vcpus - 1;
    find(&out, &format!("smp: Brought up 1 node, {vcpus} CPUs"));
    let ready = find(&out, "\nVMM-GUEST-READY\n");
    let done = find(&out, "\ndone\n");
    let text = &out[ready..=done];
    for cpu in 0..vcpus {
        assert!(
            text.contains(&format!("\nprocessor\t: {cpu}\nhart\t\t: {cpu}\n")),
            "no processor {cpu} in /proc/cpuinfo:\n{out}"
        );
    }
    assert!(
        text.contains(&format!("\n0-{last}\n{vcpus}\n")),
        "online CPUs / nproc:\n{out}"
    );
    assert!(
        out[done..].contains("\nVMM-GUEST-EXIT 0\n"),
        "the workload failed:\n{out}"
    );
    assert!(exit.is_clean_shutdown(), "{exit:?}\n{out}");
    assert_eq!(
        stats.exits.get("sbi HSM"),
        vcpus - 1,
        "{}",
        stats.exits.table()
    );
    assert!(stats.exits.get("sbi IPI") > 0, "{}", stats.exits.table());
    // Every vCPU's timer is its stimecmp (Sstc, the default).
    assert!(
        text.matches("sstc").count() as u64 >= vcpus,
        "sstc in /proc/cpuinfo:\n{out}"
    );
    assert_eq!(stats.exits.get("sbi TIME"), 0, "{}", stats.exits.table());
    stats
}

#[test]
fn linux_runs_with_every_virtual_instruction_trap_on_2_vcpus() {
    // hstatus.VTW, VTSR, VTVM and hcounteren.TM = 0 (`vmm run --trap wfi,time,sret,vm`):
    // every WFI, SRET, SFENCE.VMA, satp access and time read of the kernel exits and the VMM
    // emulates it; the kernel must not notice.
    let guest = linux_guest();
    let mut config = RunConfig::new(&guest.kernel);
    config.initrd = Some(guest.initrd.clone());
    config.cmdline = format!(
        "{BASE_CMDLINE} vmmcmd=\"busybox md5sum /bin/busybox; echo 6*7=$((6*7)); sleep 1; echo done\""
    );
    config.memory_mib = LINUX_MEMORY_MIB;
    config.max_insns = Some(LINUX_BUDGET * 2); // per vCPU, as in `boot_config`
    config.vcpus = 2;
    let policy = vmm::run::GuestPolicy {
        trap_wfi: true,
        trap_time: true,
        trap_sret: true,
        trap_vm: true,
        ..vmm::run::GuestPolicy::default()
    };
    let (exit, stats, out) = linux_kit::boot_with_policy(&config, policy);
    linux_kit::assert_workload_passed(&exit, &out, "the workload");
    assert!(
        out.contains("\n6*7=42\n") && out.contains("\ndone\n"),
        "{out}"
    );
    assert!(out.contains("smp: Brought up 1 node, 2 CPUs"), "{out}");
    let table = stats.exits.table();
    for (reason, at_least) in [
        ("virtual-insn sret", 1000),
        ("virtual-insn sfence.vma", 1000),
        ("virtual-insn csr satp (0x180)", 2),
        ("virtual-insn csr time (0xc01)", 100),
        ("virtual-insn wfi", 1),
    ] {
        assert!(stats.exits.get(reason) >= at_least, "{reason}:\n{table}");
    }
    // Nothing was refused: no illegal instruction went back into the kernel.
    let injected = stats
        .exits
        .virtual_insn_exits()
        .iter()
        .filter(|r| r.action == vmm::run::VirtualInsnAction::InjectedIllegal)
        .count();
    assert_eq!(injected, 0, "{table}");
    // `time` trapped: Sstc is not offered (its accesses would trap too), the timer is SBI's.
    assert!(stats.exits.get("sbi TIME") > 0, "{table}");
}

#[test]
fn linux_boots_with_2_vcpus() {
    linux_smp_boot(2, None);
}

#[test]
fn linux_boots_with_4_vcpus() {
    linux_smp_boot(4, None);
}

/// `--pcpus 1`: both vCPUs take turns on one hart instance (IPIs, remote fences, HSM and
/// WFI idling with one vCPU off the hart).
#[test]
fn linux_boots_with_2_vcpus_on_1_hart() {
    let stats = linux_smp_boot(2, Some(1));
    assert_eq!(stats.switches.len(), 1);
    assert!(stats.switches[0] > 100, "{:?}", stats.switches);
}

/// `--aia aplic-imsic` with `vcpus` vCPUs on `pcpus` hart instances: Linux finds the
/// IMSIC and APLIC in the device tree, its console UART is interrupt-driven (APLIC source
/// 10, forwarded by MSI: `/proc/interrupts` counts it), and its IPIs are MSIs stored to
/// the IMSIC pages, not SBI IPI calls; `/proc/cpuinfo` names `ssaia` and `sstc`, and the
/// timer makes no SBI TIME call. The console needs no drain before the power-off
/// (`/bin/drain-console` returns at once when ttyS0 has an interrupt): the guest's last
/// 9 KB of output, written just before it, all arrive. Returns the run's statistics.
fn linux_aia_boot(vcpus: u64, pcpus: Option<u64>) -> RunStats {
    let guest = linux_guest();
    let mut config = RunConfig::new(&guest.kernel);
    config.initrd = Some(guest.initrd.clone());
    config.cmdline = format!(
        "{BASE_CMDLINE} vmmcmd=\"grep -m1 ^isa /proc/cpuinfo; grep -e ttyS -e IPI /proc/interrupts; seq -w 1 1800; echo 6*7=$((6*7))\""
    );
    config.memory_mib = LINUX_MEMORY_MIB;
    config.max_insns = Some(LINUX_BUDGET * vcpus); // per vCPU, as in `boot_config`
    config.vcpus = vcpus;
    config.pcpus = pcpus;
    config.aia = vmm::run::aia::AiaMode::AplicImsic;
    let (exit, stats, out) = linux_kit::boot(&config);
    let table = stats.exits.table();
    assert!(out.contains("VMM-GUEST-EXIT 0"), "{out}\n{table}");
    assert!(out.contains("6*7=42"), "{out}");
    // Every number, in order, at the start of a line (a kernel message may follow one on
    // its line).
    let mut at = 0;
    for n in 1..=1800 {
        let line = format!("\n{n:04}");
        match out[at..].find(&line) {
            Some(i) => at += i + line.len(),
            None => panic!("output lost from {n:04} on:\n{}", &out[at..]),
        }
    }
    assert!(
        matches!(
            exit,
            RunExit::Reset(ResetRequest {
                kind: ResetType::Shutdown,
                ..
            })
        ),
        "{exit:?}"
    );
    // `  11:  N ... APLIC-MSI-d000000.aplic  10 Level ... ttyS0`, with N > 0 on some CPU.
    let line = out
        .lines()
        .find(|l| l.ends_with("ttyS0") && l.contains(" Level "))
        .unwrap_or_else(|| panic!("no ttyS0 interrupt:\n{out}"));
    assert!(
        line.contains("APLIC-MSI") && line.contains("10 Level"),
        "{line}"
    );
    let counts: u64 = line
        .split_whitespace()
        .skip(1)
        .take(vcpus as usize)
        .map(|n| n.parse::<u64>().unwrap_or(0))
        .sum();
    assert!(counts > 0, "{line}");
    assert!(stats.exits.get("mmio aplic") > 0, "{table}");
    // AIA and Sstc together: the kernel names both (the device tree's `ssaia` and
    // `sstc`), and its timer is the hart's vstimecmp, never an SBI TIME call.
    let isa = cpuinfo(&out, "isa").unwrap_or_else(|| panic!("no isa line:\n{out}"));
    for ext in AIA_EXTENSIONS.iter().chain(SSTC_EXTENSIONS) {
        assert!(isa.split('_').any(|e| e == *ext), "{isa}: lacks {ext}");
    }
    assert_eq!(stats.exits.get("sbi TIME"), 0, "{table}");
    if vcpus > 1 {
        assert!(stats.exits.get("mmio imsic msi") > 0, "{table}");
        assert_eq!(stats.exits.get("sbi IPI"), 0, "{table}");
        let ipis = out
            .lines()
            .find(|l| l.contains("Function call interrupts"))
            .unwrap_or_else(|| panic!("no IPI line:\n{out}"));
        assert!(
            ipis.split_whitespace().nth(1).is_some_and(|n| n != "0"),
            "{ipis}"
        );
    }
    stats
}

#[test]
fn linux_boots_with_aia_on_1_vcpu() {
    linux_aia_boot(1, None);
}

#[test]
fn linux_boots_with_aia_on_4_vcpus() {
    linux_aia_boot(4, None);
}

/// MSIs to vCPUs that are off their hart wait in their mailboxes (`--pcpus 1`).
#[test]
fn linux_boots_with_aia_on_2_vcpus_on_1_hart() {
    linux_aia_boot(2, Some(1));
}
