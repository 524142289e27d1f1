//! Snapshots across processes with the `vmm` binary and its built-in CTR self-test guest:
//! `vmm run --max-insns N --snapshot-on-stop F` then `vmm restore --snapshot F` prints what
//! one uninterrupted `vmm run` prints, wherever the cut falls (before, during and after the
//! guest records CTR history); a host without the guest's CTR depth refuses the snapshot.

mod common;

use common::vmm;

#[test]
fn run_snapshot_restore_in_new_processes() {
    let (code, whole, err) = vmm(&["run", "--memory", "16"]);
    assert_eq!(code, 0, "{err}");
    assert!(whole.contains("transfers recorded"), "{whole}");
    let snap = std::env::temp_dir().join(format!("vmm-cli-snap-{}", std::process::id()));
    let snap = snap.to_str().unwrap();
    for cut in ["2000", "3500", "6000", "9000", "20000"] {
        let (code, first, err) = vmm(&[
            "run",
            "--memory",
            "16",
            "--max-insns",
            cut,
            "--snapshot-on-stop",
            snap,
        ]);
        assert_eq!(code, 124, "cut {cut}: {err}");
        for host in ["16,32,64,128,256", "16,64"] {
            let (code, rest, err) =
                vmm(&["restore", "--snapshot", snap, "--host-ctr-depths", host]);
            assert_eq!(code, 0, "cut {cut}, host {host}: {err}");
            assert_eq!(format!("{first}{rest}"), whole, "cut {cut}, host {host}");
        }
    }
    // Cut after the guest selected 64 entries: a host with only 16 and 32 refuses it.
    vmm(&[
        "run",
        "--memory",
        "16",
        "--max-insns",
        "6000",
        "--snapshot-on-stop",
        snap,
    ]);
    // The budget and `--stats` count this process's instructions (issue 18, item 5).
    let (code, _, err) = vmm(&[
        "restore",
        "--snapshot",
        snap,
        "--max-insns",
        "4000",
        "--stats",
    ]);
    assert_eq!(code, 124, "{err}");
    assert!(
        err.contains("instruction budget of 4000 exhausted"),
        "{err}"
    );
    assert!(err.contains("vmm: 4000 instructions in "), "{err}");
    assert!(
        err.contains("vmm: 10000 instructions since the guest booted (6000 before the snapshot)"),
        "{err}"
    );
    let (code, out, err) = vmm(&["restore", "--snapshot", snap, "--host-ctr-depths", "16,32"]);
    assert_eq!(code, 1);
    assert!(out.is_empty(), "the guest ran: {out}");
    assert!(
        err.contains("the guest uses CTR depth 64") && err.contains("16,32"),
        "{err}"
    );
    // Not a snapshot.
    std::fs::write(snap, b"not a snapshot").unwrap();
    let (code, _, err) = vmm(&["restore", "--snapshot", snap]);
    assert_eq!(code, 1);
    assert!(err.contains("not a vmm snapshot"), "{err}");
    // Not a regular file: refused without reading (a FIFO would block, /dev/zero never ends).
    let (code, out, err) = vmm(&["restore", "--snapshot", "/dev/zero"]);
    assert_eq!(code, 1);
    assert!(out.is_empty(), "the guest ran: {out}");
    assert!(
        err.contains("snapshot /dev/zero: is a character device, not a regular file"),
        "{err}"
    );
    // A snapshot target in a directory that does not exist: refused before the guest runs.
    let target = format!("{snap}-no-such-dir/s");
    let (code, out, err) = vmm(&["run", "--max-insns", "6000", "--snapshot-on-stop", &target]);
    assert_eq!(code, 1);
    assert!(out.is_empty(), "the guest ran: {out}");
    assert!(
        err.contains(&format!(
            "cannot write a snapshot to {target}: its directory"
        )),
        "{err}"
    );
    let _ = std::fs::remove_file(snap);
}
