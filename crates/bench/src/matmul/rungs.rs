//! The ladder's rungs: which kernel of `kernels/matmul.cl` each runs, with which defines, over
//! which range, and what it needs of the shape; and rung 10's tile presets.

use super::{Elem, Shape};
use gblur::gpu::opencl::ClContext;

/// Tile parameters of rung 10, passed as -D defines. Named `TSMxTSNxTSK-WPTMxWPTN`: the
/// work-group's tile of C, the depth of a local-memory tile, and each work-item's block of C.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preset {
    pub tsm: usize,
    pub tsn: usize,
    pub tsk: usize,
    pub wptm: usize,
    pub wptn: usize,
}

impl Preset {
    pub fn name(&self) -> String {
        format!(
            "{}x{}x{}-{}x{}",
            self.tsm, self.tsn, self.tsk, self.wptm, self.wptn
        )
    }

    /// A name in the `TSMxTSNxTSK-WPTMxWPTN` form, checked against what the kernel needs.
    pub fn parse(s: &str) -> Result<Preset, String> {
        let bad =
            || format!("'{s}' is not a preset: use TSMxTSNxTSK-WPTMxWPTN, e.g. 128x128x8-8x8");
        let (tile, wpt) = s.split_once('-').ok_or_else(bad)?;
        let num = |v: &str| v.parse::<usize>().ok().filter(|v| *v > 0);
        let t: Vec<Option<usize>> = tile.split('x').map(num).collect();
        let w: Vec<Option<usize>> = wpt.split('x').map(num).collect();
        let p = match (&t[..], &w[..]) {
            ([Some(tsm), Some(tsn), Some(tsk)], [Some(wptm), Some(wptn)]) => Preset {
                tsm: *tsm,
                tsn: *tsn,
                tsk: *tsk,
                wptm: *wptm,
                wptn: *wptn,
            },
            _ => return Err(bad()),
        };
        let items = (p.tsm / p.wptm.max(1)) * (p.tsn / p.wptn.max(1));
        let ok = p.wptm % 4 == 0
            && p.wptn % 4 == 0
            && p.tsk % 4 == 0
            && p.tsm % p.wptm == 0
            && p.tsn % p.wptn == 0
            && (1..=1024).contains(&items)
            && (p.tsm * p.tsk / 4) % items == 0
            && (p.tsk * p.tsn / 4) % items == 0;
        if ok {
            Ok(p)
        } else {
            Err(format!(
                "preset {s}: WPTM, WPTN and TSK must be multiples of 4 dividing the tile, \
                 with the tile's float4s a multiple of the (TSM/WPTM)·(TSN/WPTN) work-items"
            ))
        }
    }

    fn defines(&self) -> String {
        format!(
            "-DTSM={} -DTSN={} -DTSK={} -DWPTM={} -DWPTN={}",
            self.tsm, self.tsn, self.tsk, self.wptm, self.wptn
        )
    }
}

/// The bundled presets, fastest first on an H100 at 4096³ (docs/BENCHMARKS.md).
pub const PRESETS: [Preset; 9] = [
    Preset {
        tsm: 64,
        tsn: 128,
        tsk: 8,
        wptm: 8,
        wptn: 8,
    },
    Preset {
        tsm: 64,
        tsn: 128,
        tsk: 16,
        wptm: 8,
        wptn: 8,
    },
    Preset {
        tsm: 128,
        tsn: 64,
        tsk: 16,
        wptm: 8,
        wptn: 8,
    },
    Preset {
        tsm: 128,
        tsn: 64,
        tsk: 8,
        wptm: 8,
        wptn: 8,
    },
    Preset {
        tsm: 128,
        tsn: 128,
        tsk: 8,
        wptm: 16,
        wptn: 8,
    },
    Preset {
        tsm: 128,
        tsn: 128,
        tsk: 8,
        wptm: 8,
        wptn: 8,
    },
    Preset {
        tsm: 128,
        tsn: 128,
        tsk: 16,
        wptm: 8,
        wptn: 8,
    },
    Preset {
        tsm: 64,
        tsn: 64,
        tsk: 16,
        wptm: 4,
        wptn: 4,
    },
    Preset {
        tsm: 64,
        tsn: 64,
        tsk: 8,
        wptm: 8,
        wptn: 8,
    },
];

/// Rung 10's presets: those named (`all` for the bundled ones), each once, in order; when none
/// are named, every bundled one on a GPU (they take milliseconds), and on other devices the
/// one that was fastest on PoCL at 512³ (docs/BENCHMARKS.md).
pub fn choose_presets(names: &[String], gpu: bool) -> Result<Vec<Preset>, String> {
    if names.is_empty() {
        return Ok(if gpu {
            PRESETS.to_vec()
        } else {
            vec![PRESETS[8]]
        });
    }
    let mut chosen = Vec::new();
    for name in names {
        let add = if name == "all" {
            PRESETS.to_vec()
        } else {
            vec![Preset::parse(name)?]
        };
        for p in add {
            if !chosen.contains(&p) {
                chosen.push(p);
            }
        }
    }
    Ok(chosen)
}

/// One kernel of the ladder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rung {
    Naive,
    Coalesced,
    Private,
    Row,
    RowPrivate,
    RowLocal,
    Tiled,
    Wpt,
    Vector(usize),
    Blocked(Preset),
}

/// Work-items per group of the row-per-work-item rungs.
const ROW_GROUP: usize = 64;
/// Rung 5 keeps a row of A in private memory: beyond this K it is a stack the size of a page
/// of floats per work-item, which some runtimes refuse.
const ROW_PRIVATE_MAX_K: usize = 16384;

impl Rung {
    pub fn number(&self) -> u8 {
        match self {
            Rung::Naive => 1,
            Rung::Coalesced => 2,
            Rung::Private => 3,
            Rung::Row => 4,
            Rung::RowPrivate => 5,
            Rung::RowLocal => 6,
            Rung::Tiled => 7,
            Rung::Wpt => 8,
            Rung::Vector(_) => 9,
            Rung::Blocked(_) => 10,
        }
    }

    pub fn name(&self) -> String {
        let what = match self {
            Rung::Naive => "naive (row per dim 0)".to_string(),
            Rung::Coalesced => "coalesced (column per dim 0)".into(),
            Rung::Private => "private accumulator".into(),
            Rung::Row => "one row per work-item".into(),
            Rung::RowPrivate => "row of A in private memory".into(),
            Rung::RowLocal => "column of B in local memory".into(),
            Rung::Tiled => "16x16 local tiles".into(),
            Rung::Wpt => "32x32 tiles, 8 per work-item".into(),
            Rung::Vector(w) => format!("float{w} tiles"),
            Rung::Blocked(p) => format!("register blocking {}", p.name()),
        };
        format!("{:>2} {what}", self.number())
    }

    pub(super) fn kernel(&self) -> &'static str {
        match self {
            Rung::Naive => "matmul_naive",
            Rung::Coalesced => "matmul_coalesced",
            Rung::Private => "matmul_private",
            Rung::Row => "matmul_row",
            Rung::RowPrivate => "matmul_row_private",
            Rung::RowLocal => "matmul_row_local",
            Rung::Tiled => "matmul_tiled",
            Rung::Wpt => "matmul_wpt",
            Rung::Vector(_) => "matmul_vector",
            Rung::Blocked(_) => "matmul_blocked",
        }
    }

    pub(super) fn defines(&self, s: Shape, elem: Elem) -> String {
        let own = match self {
            Rung::RowPrivate | Rung::RowLocal => format!("-DKDIM={}", s.k),
            Rung::Tiled => "-DTS=16".into(),
            Rung::Wpt => "-DTSW=32 -DWPT=8".into(),
            Rung::Vector(w) => format!("-DTSV=32 -DVW={w}"),
            Rung::Blocked(p) => p.defines(),
            _ => String::new(),
        };
        format!("{} {own}", elem.defines()).trim().to_string()
    }

    /// The multiples M, N and K must be of; the host pads the operands on the device when
    /// they are not.
    pub(super) fn padding(&self) -> Option<(usize, usize, usize)> {
        match self {
            Rung::Vector(_) => Some((32, 32, 32)),
            Rung::Blocked(p) => Some((p.tsm, p.tsn, p.tsk)),
            _ => None,
        }
    }

    /// Rungs 4-6 read B transposed, made on the device inside the timed run.
    pub(super) fn reads_bt(&self) -> bool {
        matches!(self, Rung::Row | Rung::RowPrivate | Rung::RowLocal)
    }

    /// The rungs without local-memory tiles: the ones whose time explodes with size.
    pub(super) fn untiled(&self) -> bool {
        self.number() <= 6
    }

    /// Global and local sizes over the (padded) shape.
    pub(super) fn ndrange(&self, s: Shape) -> (Vec<usize>, Vec<usize>) {
        let up = |v: usize, m: usize| v.next_multiple_of(m);
        match self {
            Rung::Naive => (vec![up(s.m, 16), up(s.n, 16)], vec![16, 16]),
            Rung::Coalesced | Rung::Private | Rung::Tiled => {
                (vec![up(s.n, 16), up(s.m, 16)], vec![16, 16])
            }
            Rung::Row | Rung::RowPrivate | Rung::RowLocal => {
                (vec![up(s.m, ROW_GROUP)], vec![ROW_GROUP])
            }
            Rung::Wpt => (vec![up(s.n, 32), up(s.m, 32) / 8], vec![32, 4]),
            Rung::Vector(w) => (vec![s.n / w, s.m], vec![32 / w, 32]),
            Rung::Blocked(p) => (
                vec![s.n / p.wptn, s.m / p.wptm],
                vec![p.tsn / p.wptn, p.tsm / p.wptm],
            ),
        }
    }

    /// Why this rung cannot run this shape on this device, if it cannot.
    pub(super) fn unsupported(&self, s: Shape, ctx: &ClContext) -> Option<String> {
        match self {
            Rung::RowPrivate if s.k > ROW_PRIVATE_MAX_K => Some(format!(
                "a private row of K = {} floats (limit {ROW_PRIVATE_MAX_K})",
                s.k
            )),
            Rung::RowLocal if (s.k * 4) as u64 + 1024 > ctx.info.local_mem_kib << 10 => {
                Some(format!(
                    "a column of K = {} floats exceeds {} KiB of local memory",
                    s.k, ctx.info.local_mem_kib
                ))
            }
            _ => None,
        }
    }
}

/// The ladder, in order, with rung 10 once per preset.
pub fn ladder(presets: &[Preset]) -> Vec<Rung> {
    let mut rungs = vec![
        Rung::Naive,
        Rung::Coalesced,
        Rung::Private,
        Rung::Row,
        Rung::RowPrivate,
        Rung::RowLocal,
        Rung::Tiled,
        Rung::Wpt,
        Rung::Vector(4),
        Rung::Vector(8),
    ];
    rungs.extend(presets.iter().map(|&p| Rung::Blocked(p)));
    rungs
}
