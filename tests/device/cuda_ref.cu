/* SPDX-License-Identifier: MIT */
/* cuda_ref.cu: the ceilings tests/device/cuda.sh compares the plugin with,
 * measured in the same run on the same GPU, one key=value line each:
 *
 *   ref name=cublas_gemm_f16  cuBLAS's own GEMM in the plugin's
 *                             configuration (F16 x F16 -> F32, F32
 *                             accumulation, A transposed), m=n=k=8192
 *   ref name=read_bw          a streaming read of 4 GiB (16-byte loads,
 *                             summed so they cannot be dropped): the
 *                             ceiling of a matrix-vector product, which
 *                             only reads weights
 *   ref name=copy_bw          cudaMemcpy device to device, bytes read plus
 *                             written
 *
 * Built by the script with nvcc and linked with -lcublas (a test helper
 * may need cuBLAS; the plugin does not). Each figure is the mean of timed
 * runs after a warm-up, timed with CUDA events. */
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdio.h>

#define CHECK(call)                                                                         \
    do {                                                                                    \
        const cudaError_t e_ = (call);                                                      \
        if (e_ != cudaSuccess) {                                                            \
            printf("ref error=\"%s: %s\"\n", #call, cudaGetErrorString(e_));                \
            return 1;                                                                       \
        }                                                                                   \
    } while (0)

__global__ void fill_half(__half *p, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = __float2half((float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f);
}

__global__ void read_all(const uint4 *p, size_t n, unsigned *out) {
    unsigned acc = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const uint4 v = p[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x12345678u) *out = acc; /* practically never: keeps the loads */
}

/* Mean milliseconds of runs calls of fn after one warm-up. */
template <typename F>
static float time_ms(F fn, int runs) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    fn();
    cudaEventRecord(a);
    for (int i = 0; i < runs; i++) fn();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0.0f;
    cudaEventElapsedTime(&ms, a, b);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return ms / runs;
}

static int gemm_ref(void) {
    const int n = 8192;
    __half *a, *b;
    float *c;
    CHECK(cudaMalloc(&a, (size_t)n * n * sizeof *a));
    CHECK(cudaMalloc(&b, (size_t)n * n * sizeof *b));
    CHECK(cudaMalloc(&c, (size_t)n * n * sizeof *c));
    fill_half<<<1024, 256>>>(a, (size_t)n * n);
    fill_half<<<1024, 256>>>(b, (size_t)n * n);
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
        printf("ref name=cublas_gemm_f16 error=\"cublasCreate failed\"\n");
        return 1;
    }
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
    const float ms = time_ms([&] {
        s = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &one, a, CUDA_R_16F, n, b, CUDA_R_16F,
                         n, &zero, c, CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    }, 10);
    if (s != CUBLAS_STATUS_SUCCESS) printf("ref name=cublas_gemm_f16 error=\"status %d\"\n", (int)s);
    else printf("ref name=cublas_gemm_f16 ms=%.3f tflops=%.1f\n", ms, 2.0 * n * n * (double)n / ms * 1e-9);
    cublasDestroy(h);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    return s != CUBLAS_STATUS_SUCCESS;
}

static int bandwidth_ref(void) {
    const size_t bytes = (size_t)4 << 30;
    void *src, *dst;
    unsigned *out;
    CHECK(cudaMalloc(&src, bytes));
    CHECK(cudaMalloc(&dst, bytes));
    CHECK(cudaMalloc(&out, sizeof *out));
    CHECK(cudaMemset(src, 1, bytes));
    int n_sm = 0;
    cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount, 0);
    const float read_ms = time_ms([&] {
        read_all<<<n_sm * 8, 512>>>((const uint4 *)src, bytes / sizeof(uint4), out);
    }, 20);
    const float copy_ms = time_ms([&] { cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice); }, 10);
    CHECK(cudaGetLastError());
    printf("ref name=read_bw bytes=%zu ms=%.3f gbps=%.1f\n", bytes, read_ms, bytes / read_ms * 1e-6);
    printf("ref name=copy_bw bytes=%zu ms=%.3f gbps=%.1f\n", bytes, copy_ms, 2.0 * bytes / copy_ms * 1e-6);
    cudaFree(src);
    cudaFree(dst);
    cudaFree(out);
    return 0;
}

int main(void) {
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("ref name=device gpu=\"%s\" cc=%d.%d sms=%d\n", prop.name, prop.major, prop.minor,
           prop.multiProcessorCount);
    const int failed = gemm_ref() + bandwidth_ref();
    return failed ? 1 : 0;
}
