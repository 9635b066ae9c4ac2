//! The OpenCL C sources bundled into the binary, and the kernel names Rust calls in them.

/// One `kernels/*.cl` file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelSource {
    pub file: &'static str,
    pub text: &'static str,
}

pub const RECURSIVE: KernelSource = KernelSource {
    file: "recursive_gaussian.cl",
    text: include_str!("../../../kernels/recursive_gaussian.cl"),
};

pub const TRANSPOSE: KernelSource = KernelSource {
    file: "transpose.cl",
    text: include_str!("../../../kernels/transpose.cl"),
};

pub const CONVOLUTION: KernelSource = KernelSource {
    file: "convolution.cl",
    text: include_str!("../../../kernels/convolution.cl"),
};

pub const COPY: KernelSource = KernelSource {
    file: "copy.cl",
    text: include_str!("../../../kernels/copy.cl"),
};

pub const BLOCKS: KernelSource = KernelSource {
    file: "recursive_blocks.cl",
    text: include_str!("../../../kernels/recursive_blocks.cl"),
};

pub const MATMUL: KernelSource = KernelSource {
    file: "matmul.cl",
    text: include_str!("../../../kernels/matmul.cl"),
};

pub const REDUCE: KernelSource = KernelSource {
    file: "reduce.cl",
    text: include_str!("../../../kernels/reduce.cl"),
};

pub const ALL_SOURCES: [KernelSource; 7] = [
    RECURSIVE,
    TRANSPOSE,
    CONVOLUTION,
    COPY,
    BLOCKS,
    MATMUL,
    REDUCE,
];

/// Every (source, kernel) pair the Rust side enqueues.
pub const KERNELS: &[(KernelSource, &str)] = &[
    (RECURSIVE, "recursive_line"),
    (BLOCKS, "block_summary"),
    (BLOCKS, "block_carry"),
    (BLOCKS, "block_final"),
    (CONVOLUTION, "fir_x"),
    (CONVOLUTION, "fir_y"),
    (CONVOLUTION, "conv2d"),
    (COPY, "copy_float"),
    (COPY, "copy_float4"),
    (COPY, "copy_mad"),
    (TRANSPOSE, "transpose_naive"),
    (TRANSPOSE, "transpose_local"),
    (TRANSPOSE, "transpose_skewed"),
    (TRANSPOSE, "transpose_padded"),
    (TRANSPOSE, "transpose_padded_skewed"),
    (TRANSPOSE, "transpose_tile32"),
    (TRANSPOSE, "transpose_tile32_skewed"),
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

/// Build options every program gets. No fast-math flags: the accuracy figures are for IEEE f32.
pub const BASE_OPTIONS: &str = "-cl-std=CL1.2";

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel is defined either as `__kernel void NAME(` or through a macro `(NAME, ...)`.
    fn defines(text: &str, name: &str) -> bool {
        text.match_indices(name).any(|(i, _)| {
            let before = text[..i].chars().last();
            let after = text[i + name.len()..].chars().next();
            matches!(before, Some(' ' | '(' | '\n')) && matches!(after, Some('(' | ','))
        })
    }

    #[test]
    fn every_kernel_rust_calls_exists_in_its_source() {
        for (src, name) in KERNELS {
            assert!(defines(src.text, name), "{name} not in {}", src.file);
        }
    }

    #[test]
    fn sources_are_listed() {
        for (src, _) in KERNELS {
            assert!(ALL_SOURCES.contains(src));
        }
    }
}
