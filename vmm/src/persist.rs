//! [`Persist`]: how every part of a VM the VMM itself saves in a snapshot is saved and
//! restored (the UART, the console input, the boot layout). A restore that refuses a state
//! says which field is at fault ([`FieldError`]). The harts, the CTR and the PMU have their
//! own state types in their crates; `run/snapshot.rs` checks those field by field.

/// A saved field a restore refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field `{field}` = {value:#x} {reason}")]
pub struct FieldError {
    /// The field, as named in the snapshot state (`uart.in_buffer`, ...).
    pub field: &'static str,
    /// Its value (a length for a sequence).
    pub value: u64,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// A part of a VM that a snapshot saves and a restore rebuilds.
pub trait Persist: Sized {
    /// What the snapshot holds of it (a part of `crate::snapshot::VmState`).
    type State;
    /// What a restore needs besides the state (the console a UART writes to, ...).
    type Context;

    /// The state to save.
    fn save(&self) -> Self::State;

    /// Rebuilds the part from `state`, or names the field that cannot be restored.
    fn restore(state: &Self::State, context: Self::Context) -> Result<Self, FieldError>;
}
