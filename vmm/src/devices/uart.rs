//! The ns16550a UART, built on rust-vmm's `vm-superio` [`Serial`].
//!
//! Registers are 8 bits wide at offsets 0..8 of the window (no register shift, like QEMU's
//! `virt`). Only byte accesses are accepted. Output goes to the [`Console`] given by the caller.
//! Input exists only when the caller feeds it ([`Uart::enqueue_input`], used by `vmm run`
//! and by `vmm machine`, [`crate::machine::Machine::enqueue_input`]). The line status register always shows the
//! transmitter empty and idle, so guests that poll it before each byte make progress.
//!
//! The interrupt output is modelled here, not by `vm-superio` (whose IIR clears every
//! condition on a read and reports two at once), as a 16550 and QEMU's `virt` UART behave:
//! - received data available (IER bit 0): pending while the receive buffer holds data;
//! - transmitter holding register empty (IER bit 1): becomes pending when a byte is written
//!   to THR (it is sent at once) and when the bit is enabled; cleared by an IIR read that
//!   reports it, by a THR write, or by disabling it.
//!
//! IIR reports the highest-priority pending condition (received data `0x04`, then THR empty
//! `0x02`, else `0x01`, "no interrupt"), with bits 7:6 set while FCR bit 0 (FIFO enable) is
//! set. [`Uart::interrupt_level`] is the interrupt line: any condition pending. `vmm machine`
//! wires it to the PLIC's source 10 ([`crate::devices::plic`]); `vmm run` leaves it
//! unconnected.

use vm_superio::serial::NoEvents;
use vm_superio::{Serial, Trigger};

use super::Console;
use crate::persist::{FieldError, Persist};

/// Number of registers; the rest of the window reads as 0.
const REGISTERS: u64 = 8;

/// `vm-superio`'s interrupt callback, unused: the level is [`Uart::interrupt_level`].
#[derive(Debug, Default, Clone, Copy)]
pub struct NoInterrupt;

impl Trigger for NoInterrupt {
    type E = std::convert::Infallible;

    fn trigger(&self) -> Result<(), Self::E> {
        Ok(())
    }
}

/// A snapshot of the UART: vm-superio's registers (divisor low/high, IER, IIR, LCR, LSR,
/// MCR, MSR, scratch) and receive FIFO. The IIR byte holds this model's interrupt state: bit
/// 1 the pending THR-empty condition, bits 7:6 FIFO enable (0 in snapshots of older versions,
/// which read the same way).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct UartState {
    /// The registers, in the order above.
    pub registers: [u8; 9],
    /// Received bytes not yet read by the guest.
    pub in_buffer: Vec<u8>,
}

impl std::fmt::Debug for Uart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Uart").finish_non_exhaustive()
    }
}

/// Register offsets and bits used by the interrupt model.
const THR: u64 = 0;
const IER: u64 = 1;
const IIR_FCR: u64 = 2;
const LCR: u8 = 3;
const LSR: u8 = 5;
const LCR_DLAB: u8 = 0x80;
const LSR_DATA_READY: u8 = 0x01;
const IER_RDA: u8 = 0x01;
const IER_THRE: u8 = 0x02;
const IIR_NONE: u8 = 0x01;
const IIR_THRE: u8 = 0x02;
const IIR_RDA: u8 = 0x04;
const IIR_FIFO: u8 = 0xc0;
const FCR_FIFO_ENABLE: u8 = 0x01;

/// The UART device.
pub struct Uart {
    serial: Serial<NoInterrupt, NoEvents, Console>,
    /// The THR-empty condition is pending.
    thre_pending: bool,
    /// FCR bit 0.
    fifo_enabled: bool,
}

impl Uart {
    /// A UART writing to `console`.
    pub fn new(console: Console) -> Self {
        Uart {
            serial: Serial::new(NoInterrupt, console),
            thre_pending: false,
            fifo_enabled: false,
        }
    }

    fn registers(&self) -> (u8, u8, u8) {
        let s = self.serial.state();
        (s.interrupt_enable, s.line_control, s.line_status)
    }

    /// The interrupt identification: the highest-priority enabled pending condition.
    fn identification(&self) -> u8 {
        let (ier, _, lsr) = self.registers();
        let id = if ier & IER_RDA != 0 && lsr & LSR_DATA_READY != 0 {
            IIR_RDA
        } else if ier & IER_THRE != 0 && self.thre_pending {
            IIR_THRE
        } else {
            IIR_NONE
        };
        if self.fifo_enabled {
            id | IIR_FIFO
        } else {
            id
        }
    }

    /// Whether the received-data interrupt is enabled (IER bit 0).
    pub fn receive_interrupt_enabled(&self) -> bool {
        self.registers().0 & IER_RDA != 0
    }

    /// The interrupt output: a condition is pending and enabled.
    pub fn interrupt_level(&self) -> bool {
        self.identification() & 0x0f != IIR_NONE
    }

    /// The console output, for other devices that print (HTIF).
    pub fn console(&mut self) -> &mut Console {
        self.serial.writer_mut()
    }

    /// Puts received bytes in the receive FIFO, as many as fit; returns how many.
    pub fn enqueue_input(&mut self, bytes: &[u8]) -> usize {
        let n = bytes.len().min(self.serial.fifo_capacity());
        if n == 0 {
            return 0;
        }
        self.serial.enqueue_raw_bytes(&bytes[..n]).unwrap_or(0)
    }

    /// Free space in the receive FIFO.
    pub fn input_room(&self) -> usize {
        self.serial.fifo_capacity()
    }

    /// Takes received bytes the guest has not read yet out of the receive FIFO (for another
    /// console interface that shares the input); returns how many. Nothing is taken while the
    /// divisor latch is selected, since offset 0 is then the divisor.
    pub fn take_input(&mut self, buf: &mut [u8]) -> usize {
        if self.serial.read(LCR) & LCR_DLAB != 0 {
            return 0;
        }
        let mut n = 0;
        while n < buf.len() && self.serial.read(LSR) & LSR_DATA_READY != 0 {
            buf[n] = self.serial.read(0);
            n += 1;
        }
        n
    }

    /// A load of `size` bytes at `offset` in the window.
    pub fn read(&mut self, offset: u64, size: u8) -> u64 {
        if size != 1 {
            log::warn!(
                "uart: {size}-byte read at offset {offset:#x} ignored (registers are 8-bit)"
            );
            return 0;
        }
        if offset >= REGISTERS {
            return 0;
        }
        if offset == IIR_FCR {
            let iir = self.identification();
            if iir & 0x0f == IIR_THRE {
                self.thre_pending = false;
            }
            return u64::from(iir);
        }
        u64::from(self.serial.read(offset as u8))
    }

    /// A store of `size` bytes at `offset` in the window.
    pub fn write(&mut self, offset: u64, size: u8, value: u64) {
        if size != 1 {
            log::warn!("uart: {size}-byte write of {value:#x} at offset {offset:#x} ignored (registers are 8-bit)");
            return;
        }
        if offset >= REGISTERS {
            return;
        }
        let value = value as u8;
        let (ier, lcr, _) = self.registers();
        let dlab = lcr & LCR_DLAB != 0;
        match offset {
            IIR_FCR => self.fifo_enabled = value & FCR_FIFO_ENABLE != 0,
            // The byte leaves at once, so THR is empty again.
            THR if !dlab => self.thre_pending = true,
            IER if !dlab => {
                if value & IER_THRE == 0 {
                    self.thre_pending = false;
                } else if ier & IER_THRE == 0 {
                    self.thre_pending = true;
                }
            }
            _ => {}
        }
        if let Err(e) = self.serial.write(offset as u8, value) {
            log::warn!("uart: console output failed: {e}");
        }
    }
}

impl Persist for Uart {
    /// The registers and the receive FIFO.
    type State = UartState;
    /// Where the restored UART writes.
    type Context = Console;

    fn save(&self) -> UartState {
        let s = self.serial.state();
        UartState {
            registers: [
                s.baud_divisor_low,
                s.baud_divisor_high,
                s.interrupt_enable,
                if self.fifo_enabled { IIR_FIFO } else { 0 }
                    | if self.thre_pending {
                        IIR_THRE
                    } else {
                        IIR_NONE
                    },
                s.line_control,
                s.line_status,
                s.modem_control,
                s.modem_status,
                s.scratch,
            ],
            in_buffer: s.in_buffer,
        }
    }

    fn restore(state: &UartState, console: Console) -> Result<Self, FieldError> {
        let r = state.registers;
        let s = vm_superio::serial::SerialState {
            baud_divisor_low: r[0],
            baud_divisor_high: r[1],
            interrupt_enable: r[2],
            interrupt_identification: r[3],
            line_control: r[4],
            line_status: r[5],
            modem_control: r[6],
            modem_status: r[7],
            scratch: r[8],
            in_buffer: state.in_buffer.clone(),
        };
        // vm-superio refuses nothing else.
        let serial =
            Serial::from_state(&s, NoInterrupt, NoEvents, console).map_err(|_| FieldError {
                field: "uart.in_buffer",
                value: state.in_buffer.len() as u64,
                reason: "bytes are more than the receive FIFO holds",
            })?;
        Ok(Uart {
            serial,
            thre_pending: r[3] & IIR_THRE != 0,
            fifo_enabled: r[3] & IIR_FIFO != 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::SharedBuf;
    use std::io::Write;

    #[test]
    fn transmits_bytes_and_reports_empty_transmitter() {
        let buf = SharedBuf::default();
        let mut uart = Uart::new(Box::new(buf.clone()));
        for b in b"hi\n" {
            assert_ne!(uart.read(5, 1) & 0x20, 0, "THR empty");
            uart.write(0, 1, u64::from(*b));
        }
        assert_eq!(uart.read(5, 1) & 0x60, 0x60);
        assert_eq!(&*buf.0.lock().unwrap(), b"hi\n");
    }

    /// A saved UART restores to the same state; a receive FIFO longer than the UART's is
    /// refused, naming the field.
    #[test]
    fn restore_round_trips_and_names_a_bad_field() {
        let mut uart = Uart::new(Box::new(std::io::sink()));
        uart.write(7, 1, 0x5a);
        uart.enqueue_input(b"abc");
        let saved = uart.save();
        let restored = Uart::restore(&saved, Box::new(std::io::sink())).unwrap();
        assert_eq!(restored.save(), saved);
        let mut bad = saved.clone();
        bad.in_buffer = vec![0; 100];
        let err = Uart::restore(&bad, Box::new(std::io::sink()))
            .err()
            .unwrap();
        assert_eq!((err.field, err.value), ("uart.in_buffer", 100));
    }

    #[test]
    fn bad_accesses_are_ignored() {
        let buf = SharedBuf::default();
        let mut uart = Uart::new(Box::new(buf.clone()));
        uart.write(0, 4, u64::from(b'x'));
        uart.write(0x10, 1, u64::from(b'y'));
        assert_eq!(uart.read(5, 4), 0);
        assert_eq!(uart.read(0x80, 1), 0);
        assert!(buf.0.lock().unwrap().is_empty());
        // Scratch register round-trips.
        uart.write(7, 1, 0x5a);
        assert_eq!(uart.read(7, 1), 0x5a);
    }

    #[test]
    fn input_is_received_once() {
        let mut uart = Uart::new(Box::new(SharedBuf::default()));
        assert_eq!(uart.read(5, 1) & 1, 0, "no data ready");
        assert_eq!(uart.enqueue_input(b"abc"), 3);
        assert_eq!(uart.read(5, 1) & 1, 1, "data ready");
        assert_eq!(uart.read(0, 1), u64::from(b'a'));
        let mut buf = [0u8; 8];
        assert_eq!(uart.take_input(&mut buf), 2);
        assert_eq!(&buf[..2], b"bc");
        assert_eq!(uart.read(5, 1) & 1, 0);
        let big = [b'x'; 200];
        let n = uart.enqueue_input(&big);
        assert!(n > 0 && n < 200, "FIFO is bounded ({n})");
        assert_eq!(uart.enqueue_input(&big), 0);
    }

    /// IER/IIR as a 16550 (and QEMU's `virt` UART) behave: THR empty on enabling and after
    /// each byte, cleared by the IIR read reporting it; received data before THR empty and
    /// pending while data is there; bits 7:6 follow FCR bit 0; the level follows IIR.
    #[test]
    fn interrupt_identification_and_level() {
        let mut uart = Uart::new(Box::new(SharedBuf::default()));
        assert_eq!(uart.read(2, 1), 0x01);
        assert!(!uart.interrupt_level());
        uart.write(1, 1, 0x02);
        assert!(uart.interrupt_level());
        assert_eq!(uart.read(2, 1), 0x02);
        assert_eq!(
            uart.read(2, 1),
            0x01,
            "the read reporting THR empty clears it"
        );
        assert!(!uart.interrupt_level());
        uart.write(1, 1, 0x02);
        assert!(
            !uart.interrupt_level(),
            "IER rewritten with THRE still on: no new edge"
        );
        uart.write(0, 1, u64::from(b'x'));
        assert!(uart.interrupt_level(), "THR empty again after the byte");
        uart.write(1, 1, 0);
        assert!(!uart.interrupt_level(), "disabled");
        uart.write(1, 1, 0x03);
        uart.enqueue_input(b"ab");
        assert_eq!(uart.read(2, 1), 0x04, "received data first");
        assert_eq!(uart.read(2, 1), 0x04, "while data is there");
        assert_eq!(uart.read(0, 1), u64::from(b'a'));
        assert_eq!(uart.read(2, 1), 0x04);
        assert_eq!(uart.read(0, 1), u64::from(b'b'));
        assert_eq!(uart.read(2, 1), 0x02, "THR empty was kept");
        assert_eq!(uart.read(2, 1), 0x01);
        uart.write(2, 1, 0x07);
        assert_eq!(uart.read(2, 1), 0xc1);
        uart.write(1, 1, 0x01);
        uart.enqueue_input(b"c");
        assert!(uart.interrupt_level());
        uart.write(1, 1, 0);
        assert!(!uart.interrupt_level(), "received data masked");
        assert_eq!(uart.read(2, 1), 0xc1);
        uart.write(2, 1, 0);
        assert_eq!(uart.read(2, 1), 0x01);
        // The divisor latch hides IER and THR.
        uart.write(3, 1, 0x80);
        uart.write(1, 1, 0x02);
        uart.write(0, 1, 0x01);
        uart.write(3, 1, 0x03);
        assert!(!uart.interrupt_level());
        assert_eq!(uart.read(1, 1), 0);
    }

    /// The interrupt state survives a snapshot.
    #[test]
    fn interrupt_state_is_saved() {
        let mut uart = Uart::new(Box::new(std::io::sink()));
        uart.write(2, 1, 1);
        uart.write(1, 1, 2);
        let restored = Uart::restore(&uart.save(), Box::new(std::io::sink())).unwrap();
        assert!(restored.interrupt_level());
        let mut restored = restored;
        assert_eq!(restored.read(2, 1), 0xc2);
        assert_eq!(restored.read(2, 1), 0xc1);
        let again = Uart::restore(&restored.save(), Box::new(std::io::sink())).unwrap();
        assert!(!again.interrupt_level());
    }

    #[test]
    fn htif_shares_the_console() {
        let buf = SharedBuf::default();
        let mut uart = Uart::new(Box::new(buf.clone()));
        uart.write(0, 1, u64::from(b'a'));
        uart.console().write_all(b"bc").unwrap();
        assert_eq!(&*buf.0.lock().unwrap(), b"abc");
    }
}
