//! The OpenCL C sources only the tutorial suite runs (`kernels/*.cl` of this crate), bundled
//! into the binary: the copy and MAD peaks, the 2-D convolution, the matmul ladder and the
//! dot-product ladder. The blur's kernels are the library's (`gblur::gpu::opencl::program`).

use gblur::gpu::opencl::program::KernelSource;

pub const COPY: KernelSource = KernelSource {
    file: "copy.cl",
    text: include_str!("../kernels/copy.cl"),
};

pub const MATMUL: KernelSource = KernelSource {
    file: "matmul.cl",
    text: include_str!("../kernels/matmul.cl"),
};

pub const REDUCE: KernelSource = KernelSource {
    file: "reduce.cl",
    text: include_str!("../kernels/reduce.cl"),
};

pub const CONV2D: KernelSource = KernelSource {
    file: "conv2d.cl",
    text: include_str!("../kernels/conv2d.cl"),
};

/// Every (source, kernel) pair the suite enqueues.
#[cfg(test)]
pub const KERNELS: &[(KernelSource, &str)] = &[
    (CONV2D, "conv2d"),
    (COPY, "copy_float"),
    (COPY, "copy_float4"),
    (COPY, "copy_mad"),
    (MATMUL, "matmul_naive"),
    (MATMUL, "matmul_coalesced"),
    (MATMUL, "matmul_private"),
    (MATMUL, "matmul_row"),
    (MATMUL, "matmul_row_private"),
    (MATMUL, "matmul_row_local"),
    (MATMUL, "matmul_tiled"),
    (MATMUL, "matmul_wpt"),
    (MATMUL, "matmul_vector"),
    (MATMUL, "matmul_blocked"),
    (MATMUL, "matrix_pad"),
    (MATMUL, "matrix_unpad"),
    (REDUCE, "dot_products"),
    (REDUCE, "dot_groups"),
    (REDUCE, "dot_stage1"),
    (REDUCE, "dot_stage2"),
];

#[cfg(test)]
mod tests {
    use super::KERNELS;
    use gblur::gpu::opencl::program::kernels_in;

    #[test]
    fn every_kernel_the_suite_calls_exists_in_its_source() {
        for (src, name) in KERNELS {
            assert!(
                kernels_in(src.text).contains(name),
                "{name} not in {}",
                src.file
            );
        }
    }

    /// Each of the suite's sources defines no kernel that is not listed (and so checked).
    #[test]
    fn every_kernel_of_the_suite_is_listed() {
        for src in [super::CONV2D, super::COPY, super::MATMUL, super::REDUCE] {
            for name in kernels_in(src.text) {
                assert!(
                    KERNELS.contains(&(src, name)),
                    "{name} of {} is not listed",
                    src.file
                );
            }
        }
    }
}
