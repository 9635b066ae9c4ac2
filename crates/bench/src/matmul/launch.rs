//! The rungs on the device: the operands uploaded once per shape, each rung prepared (its
//! kernel built, B's transpose or the padded copies allocated) and enqueued as one complete
//! product, then checked and timed.

use super::check::{Operands, Reference};
use super::{timed, Elem, Rung, Shape};
use crate::device::download;
use crate::kernels::MATMUL;
use crate::runner::measure;
use crate::Record;
use gblur::gpu::opencl::queue::Arg;
use gblur::gpu::opencl::{ClContext, ClError, Timed};
use gblur::gpu::transpose::{enqueue_transpose, TransposeKind};
use opencl3::kernel::Kernel;
use opencl3::memory::Buffer;

/// A, B and C on the device.
pub struct DeviceOperands {
    pub shape: Shape,
    pub a: Buffer<f32>,
    pub b: Buffer<f32>,
    pub c: Buffer<f32>,
}

impl DeviceOperands {
    pub fn upload(ctx: &ClContext, d: &Operands) -> Result<Self, ClError> {
        let s = d.shape;
        let mut a = ctx.buffer(s.m * s.k, true)?;
        let mut b = ctx.buffer(s.k * s.n, true)?;
        let c = ctx.buffer(s.m * s.n, false)?;
        ctx.write(&mut a, &d.a, "upload A")?;
        ctx.write(&mut b, &d.b, "upload B")?;
        ctx.finish()?;
        Ok(DeviceOperands { shape: s, a, b, c })
    }
}

/// One rung, ready to enqueue: its kernels built, its scratch buffers allocated.
pub struct Prepared {
    rung: Rung,
    kernel: Kernel,
    /// B transposed (rungs 4-6).
    bt: Option<(Buffer<f32>, TransposeKind)>,
    /// Rungs 9-10 on shapes that are not tile multiples.
    padded: Option<Padded>,
}

/// Zero-padded copies of A and B, a padded C, the padded shape, and the kernels that fill
/// and empty them.
struct Padded {
    a: Buffer<f32>,
    b: Buffer<f32>,
    c: Buffer<f32>,
    shape: Shape,
    pad: Kernel,
    unpad: Kernel,
}

impl Prepared {
    pub fn new(
        ctx: &ClContext,
        rung: Rung,
        dev: &DeviceOperands,
        elem: Elem,
    ) -> Result<Self, ClError> {
        let s = dev.shape;
        let kernel = ctx.kernel(MATMUL, rung.kernel(), &rung.defines(s, elem))?;
        let bt = if rung.reads_bt() {
            Some((
                ctx.buffer(s.n * s.k, false)?,
                TransposeKind::fastest_for(&ctx.info),
            ))
        } else {
            None
        };
        let padded = match rung.padding() {
            Some(multiples) if s.padded(multiples) != s => {
                let p = s.padded(multiples);
                Some(Padded {
                    a: ctx.buffer(p.m * p.k, false)?,
                    b: ctx.buffer(p.k * p.n, false)?,
                    c: ctx.buffer(p.m * p.n, false)?,
                    shape: p,
                    pad: ctx.kernel(MATMUL, "matrix_pad", "")?,
                    unpad: ctx.kernel(MATMUL, "matrix_unpad", "")?,
                })
            }
            _ => None,
        };
        Ok(Prepared {
            rung,
            kernel,
            bt,
            padded,
        })
    }

    /// One complete product into `dev.c`: transposing or padding first when the rung needs
    /// it, all of it inside the timed run.
    pub fn enqueue(&self, ctx: &ClContext, dev: &DeviceOperands) -> Result<Vec<Timed>, ClError> {
        let s = dev.shape;
        let mut cmds = Vec::new();
        let u = |v: usize| Arg::U32(v as u32);
        if let Some((bt, kind)) = &self.bt {
            cmds.push(
                enqueue_transpose(ctx, *kind, &dev.b, bt, (s.n, s.k, 1), "B transposed")?.timed,
            );
        }
        let name = self.rung.name();
        match &self.padded {
            None => {
                let b = self.bt.as_ref().map_or(&dev.b, |(bt, _)| bt);
                let (global, local) = self.rung.ndrange(s);
                let args = [
                    Arg::Buf(&dev.a),
                    Arg::Buf(b),
                    Arg::Buf(&dev.c),
                    u(s.m),
                    u(s.n),
                    u(s.k),
                ];
                cmds.push(ctx.run(&self.kernel, &args, &global, Some(&local), &name)?);
            }
            Some(padded) => self.enqueue_padded(ctx, dev, padded, &mut cmds)?,
        }
        Ok(cmds)
    }

    /// `enqueue`'s product through `padded`'s copies: A and B padded, the product of the
    /// padded shape, C cut back out.
    fn enqueue_padded(
        &self,
        ctx: &ClContext,
        dev: &DeviceOperands,
        padded: &Padded,
        cmds: &mut Vec<Timed>,
    ) -> Result<(), ClError> {
        let Padded {
            a: ap,
            b: bp,
            c: cp,
            shape: p,
            pad,
            unpad,
        } = padded;
        let s = dev.shape;
        let u = |v: usize| Arg::U32(v as u32);
        let g2 = |cols: usize, rows: usize| [cols.next_multiple_of(16), rows.next_multiple_of(16)];
        let l2 = Some(&[16usize, 16][..]);
        // `from` (rows × cols) into the zero-padded `to` (prows × pcols).
        let pad_into = |from, to, (rows, cols), (prows, pcols), name| {
            let args = [
                Arg::Buf(from),
                Arg::Buf(to),
                u(rows),
                u(cols),
                u(prows),
                u(pcols),
            ];
            ctx.run(pad, &args, &g2(pcols, prows), l2, name)
        };
        cmds.push(pad_into(&dev.a, ap, (s.m, s.k), (p.m, p.k), "pad A")?);
        cmds.push(pad_into(&dev.b, bp, (s.k, s.n), (p.k, p.n), "pad B")?);
        let (global, local) = self.rung.ndrange(*p);
        let args = [
            Arg::Buf(ap),
            Arg::Buf(bp),
            Arg::Buf(cp),
            u(p.m),
            u(p.n),
            u(p.k),
        ];
        let name = self.rung.name();
        cmds.push(ctx.run(&self.kernel, &args, &global, Some(&local), &name)?);
        let un_args = [Arg::Buf(cp), Arg::Buf(&dev.c), u(s.m), u(s.n), u(p.n)];
        cmds.push(ctx.run(unpad, &un_args, &g2(s.n, s.m), l2, "unpad C")?);
        Ok(())
    }
}

/// Poisons C, runs the rung once, checks it, and times it if it is right.
pub(super) fn measure_rung(
    ctx: &ClContext,
    runs: usize,
    rung: Rung,
    dev: &mut DeviceOperands,
    elem: Elem,
    reference: &Reference,
    r: &mut Record,
) -> anyhow::Result<()> {
    let s = dev.shape;
    // A NaN in every element (read as int, a value no product of these operands reaches), so
    // an element the kernel never writes cannot pass.
    ctx.write_blocking(
        &mut dev.c,
        &vec![f32::from_bits(0x7fc0_1234); s.m * s.n],
        "poison C",
    )?;
    let dev: &DeviceOperands = dev;
    let prepared = Prepared::new(ctx, rung, dev, elem)?;
    prepared.enqueue(ctx, dev)?;
    ctx.finish()?;
    let got = download(ctx, &dev.c, s.m * s.n)?;
    match reference.check(&got, 0..s.m) {
        Err(why) => r.fail(why),
        Ok(()) => {
            let stats = measure(ctx, runs, || prepared.enqueue(ctx, dev))?;
            timed(r, &stats, s.flops());
        }
    }
    Ok(())
}
