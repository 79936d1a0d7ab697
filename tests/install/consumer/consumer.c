/* consumer PLAN: opens the plan through an installed libstof. Without a GPU it
 * expects STOF_ERROR_NO_DEVICE (the plan was read and checked first). With one, it runs the
 * plan synchronously on host memory, then enqueued on its own stream from and to
 * device buffers (plain and CUDA graph), and checks that every output is
 * byte-identical. Exit status 0 on success. */
#include <stof/c_api.h>

#include <cuda_runtime_api.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_STOF(call)                                                                  \
    do {                                                                                  \
        stof_status s_ = (call);                                                          \
        if (s_ != STOF_OK) {                                                              \
            fprintf(stderr, "consumer: %s failed (%d): %s\n", #call, (int)s_, stof_last_error()); \
            return 1;                                                                     \
        }                                                                                 \
    } while (0)
#define CHECK_CUDA(call)                                                                  \
    do {                                                                                  \
        cudaError_t e_ = (call);                                                          \
        if (e_ != cudaSuccess) {                                                          \
            fprintf(stderr, "consumer: %s failed: %s\n", #call, cudaGetErrorString(e_));  \
            return 1;                                                                     \
        }                                                                                 \
    } while (0)

/* Deterministic input values: floats in [-1, 1], integers 1 (a valid token id and mask value). */
static void fill(void* data, const stof_tensor_info* t) {
    const size_t n = t->bytes;
    if (t->dtype == STOF_DTYPE_F32) {
        float* f = (float*)data;
        for (size_t i = 0; i < n / 4; ++i) f[i] = (float)sin(0.37 * (double)i);
    } else if (t->dtype == STOF_DTYPE_I64) {
        int64_t* v = (int64_t*)data;
        for (size_t i = 0; i < n / 8; ++i) v[i] = 1;
    } else if (t->dtype == STOF_DTYPE_I32) {
        int32_t* v = (int32_t*)data;
        for (size_t i = 0; i < n / 4; ++i) v[i] = 1;
    } else {
        memset(data, 0, n);
    }
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: consumer PLAN\n");
        return 2;
    }
    printf("libstof %s\n", stof_version());
    stof_plan* plan = NULL;
    const stof_status open = stof_plan_open(argv[1], 0, &plan);
    if (open == STOF_ERROR_NO_DEVICE) {
        printf("consumer: the plan was read; no GPU to run it: %s\n", stof_last_error());
        return plan == NULL ? 0 : 1;
    }
    CHECK_STOF(open);

    size_t ni = 0, no = 0;
    CHECK_STOF(stof_plan_num_inputs(plan, &ni));
    CHECK_STOF(stof_plan_num_outputs(plan, &no));
    void** d_in = calloc(ni, sizeof(void*));
    void** d_out = calloc(no, sizeof(void*));
    void** ref = calloc(no, sizeof(void*));
    void** got = calloc(no, sizeof(void*));
    for (size_t i = 0; i < ni; ++i) {
        stof_tensor_info t;
        CHECK_STOF(stof_plan_input_info(plan, i, &t));
        void* h = malloc(t.bytes);
        fill(h, &t);
        CHECK_STOF(stof_plan_set_input(plan, i, h, t.bytes));
        CHECK_CUDA(cudaMalloc(&d_in[i], t.bytes));
        CHECK_CUDA(cudaMemcpy(d_in[i], h, t.bytes, cudaMemcpyHostToDevice));
        free(h);
    }
    CHECK_STOF(stof_plan_run(plan, 0));
    for (size_t i = 0; i < no; ++i) {
        stof_tensor_info t;
        CHECK_STOF(stof_plan_output_info(plan, i, &t));
        ref[i] = malloc(t.bytes);
        got[i] = malloc(t.bytes);
        CHECK_STOF(stof_plan_get_output(plan, i, ref[i], t.bytes));
        CHECK_CUDA(cudaMalloc(&d_out[i], t.bytes));
    }

    cudaStream_t stream;
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    for (int graph = 0; graph < 2; ++graph) {
        /* Poison the plan's own input buffers and the caller's output buffers: the run must use d_in. */
        for (size_t i = 0; i < ni; ++i) {
            stof_tensor_info t;
            void* own = NULL;
            CHECK_STOF(stof_plan_input_info(plan, i, &t));
            CHECK_STOF(stof_plan_input_address(plan, i, &own));
            CHECK_CUDA(cudaMemsetAsync(own, 0x7f, t.bytes, stream));
        }
        for (size_t i = 0; i < no; ++i) {
            stof_tensor_info t;
            CHECK_STOF(stof_plan_output_info(plan, i, &t));
            CHECK_CUDA(cudaMemsetAsync(d_out[i], 0xff, t.bytes, stream));
        }
        CHECK_STOF(stof_plan_enqueue(plan, (const void* const*)d_in, d_out, graph, stream));
        CHECK_CUDA(cudaStreamSynchronize(stream));
        for (size_t i = 0; i < no; ++i) {
            stof_tensor_info t;
            CHECK_STOF(stof_plan_output_info(plan, i, &t));
            CHECK_CUDA(cudaMemcpy(got[i], d_out[i], t.bytes, cudaMemcpyDeviceToHost));
            if (memcmp(got[i], ref[i], t.bytes) != 0) {
                fprintf(stderr, "consumer: output '%s' of the enqueued run (graph %d) differs from the synchronous run\n",
                        t.name, graph);
                return 1;
            }
        }
    }
    /* A host pointer CUDA does not know is refused with a message. */
    {
        void* bad[64] = {0};
        char host[16];
        bad[0] = host;
        if (ni <= 64 && stof_plan_enqueue(plan, (const void* const*)bad, NULL, 0, stream) != STOF_ERROR_INVALID_ARGUMENT) {
            fprintf(stderr, "consumer: an unregistered host pointer was accepted\n");
            return 1;
        }
        printf("refused: %s\n", stof_last_error());
    }
    CHECK_CUDA(cudaStreamDestroy(stream));
    for (size_t i = 0; i < ni; ++i) cudaFree(d_in[i]);
    for (size_t i = 0; i < no; ++i) {
        cudaFree(d_out[i]);
        free(ref[i]);
        free(got[i]);
    }
    free(d_in);
    free(d_out);
    free(ref);
    free(got);
    stof_plan_close(plan);
    printf("consumer: %zu outputs identical (synchronous, enqueued, graph)\n", no);
    return 0;
}
