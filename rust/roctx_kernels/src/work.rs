//! What a GPU activity did: a kernel, a memory copy or a memory set. Copies and sets travel
//! through the stage exactly as kernels do (joined to their launch call, attributed, bounded and
//! counted together); only the roofline report keeps to kernels.

/// What one recorded GPU activity was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Work {
    /// A kernel; its record's `kernel_id` names it.
    #[default]
    Kernel,
    /// A memory copy.
    Copy(MemCopy),
    /// A memory set.
    Set(MemSet),
}

/// A memory copy: how many bytes, which way, between which kinds of memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemCopy {
    /// Bytes copied.
    pub bytes: u64,
    /// Which way.
    pub direction: Direction,
    /// The source memory (CUPTI says; rocprofiler-sdk does not: [`MemoryKind::Unknown`]).
    pub src: MemoryKind,
    /// The destination memory.
    pub dst: MemoryKind,
    /// Asynchronous with respect to the host (CUPTI's `CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC`).
    pub is_async: bool,
}

/// A memory set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemSet {
    /// Bytes set.
    pub bytes: u64,
    /// The value written (CUPTI's `value`).
    pub value: u32,
    /// The memory set.
    pub memory: MemoryKind,
    /// Asynchronous with respect to the host (CUPTI's `CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC`).
    pub is_async: bool,
}

/// Which way a copy went, in XLA's terms (its GPU tracer's `MemcpyH2D`, ... rows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash, PartialOrd, Ord)]
pub enum Direction {
    /// Host to device.
    HostToDevice,
    /// Device to host.
    DeviceToHost,
    /// Within one device.
    DeviceToDevice,
    /// Between two devices.
    PeerToPeer,
    /// Host to host, arrays, or a direction the source did not say.
    #[default]
    Other,
}

impl Work {
    /// XLA's kinds of GPU work, in the order a stream row's name lists them
    /// (`Stream #14(Compute,MemcpyD2D,Memset)`; XLA's own order is a hash set's).
    pub const XLA_KINDS: [&'static str; 7] = ["Compute", "MemcpyH2D", "MemcpyD2H", "MemcpyD2D", "MemcpyP2P", "MemcpyOther", "Memset"];

    /// This work's index in [`Work::XLA_KINDS`].
    pub fn xla_kind_index(&self) -> usize {
        match self {
            Work::Kernel => 0,
            Work::Copy(c) => 1 + c.direction as usize,
            Work::Set(_) => 6,
        }
    }
}

// `Work::XLA_KINDS` lists the copies in `Direction`'s declaration order.
const _: () = assert!(Direction::HostToDevice as usize == 0 && Direction::Other as usize == 4);

impl Direction {
    /// XLA's name for the copies of this direction (`MemcpyH2D`, ...): a row's kind and the
    /// event's name.
    pub fn xla_name(self) -> &'static str {
        Work::XLA_KINDS[1 + self as usize]
    }
}

/// A kind of memory (CUPTI's `CUpti_ActivityMemoryKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemoryKind {
    /// Not said.
    #[default]
    Unknown,
    /// Pageable host memory.
    Pageable,
    /// Pinned host memory.
    Pinned,
    /// Device memory.
    Device,
    /// A CUDA array.
    Array,
    /// Managed (unified) memory.
    Managed,
    /// Static device memory.
    DeviceStatic,
    /// Static managed memory.
    ManagedStatic,
}

impl MemoryKind {
    /// CUPTI's `CUpti_ActivityMemoryKind` value; anything else is [`MemoryKind::Unknown`].
    pub fn from_cupti(v: u32) -> MemoryKind {
        match v {
            1 => MemoryKind::Pageable,
            2 => MemoryKind::Pinned,
            3 => MemoryKind::Device,
            4 => MemoryKind::Array,
            5 => MemoryKind::Managed,
            6 => MemoryKind::DeviceStatic,
            7 => MemoryKind::ManagedStatic,
            _ => MemoryKind::Unknown,
        }
    }

    /// CUPTI's `CUpti_ActivityMemoryKind` value (0 for unknown).
    pub fn cupti_value(self) -> u32 {
        match self {
            MemoryKind::Unknown => 0,
            MemoryKind::Pageable => 1,
            MemoryKind::Pinned => 2,
            MemoryKind::Device => 3,
            MemoryKind::Array => 4,
            MemoryKind::Managed => 5,
            MemoryKind::DeviceStatic => 6,
            MemoryKind::ManagedStatic => 7,
        }
    }

    /// The word XLA prints for it in `memcpy_details`.
    pub fn name(self) -> &'static str {
        match self {
            MemoryKind::Unknown => "unknown",
            MemoryKind::Pageable => "pageable",
            MemoryKind::Pinned => "pinned",
            MemoryKind::Device => "device",
            MemoryKind::Array => "array",
            MemoryKind::Managed => "managed",
            MemoryKind::DeviceStatic => "device_static",
            MemoryKind::ManagedStatic => "managed_static",
        }
    }
}

/// Where a CUDA or HIP graph launch ran an activity: the executable graph and its node. Zero
/// for work not launched from a graph. On CUDA (13.0, measured) a node id is
/// `graph exec id << 32 | the node's index`, and the same index in the graph it was
/// instantiated from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GraphNode {
    /// The executable graph's id (CUPTI's `graphId`; 0: not a graph launch).
    pub graph_id: u32,
    /// The node's id (CUPTI's `graphNodeId`).
    pub node_id: u64,
}

impl GraphNode {
    /// Whether the activity ran from a graph launch.
    pub fn is_graph(self) -> bool {
        self.graph_id != 0
    }
}
