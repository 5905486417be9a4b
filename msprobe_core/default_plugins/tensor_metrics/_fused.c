/* One pass over a piece of a float32 tensor pair: everything blocks._Plan._piece computes
 * with about a dozen numpy passes, except the float64 dot products (left to BLAS, so that Cosine and
 * EucDist stay bit-identical to msprobe's np.dot).
 *
 * fused_f32(n, b, n64, b64, d64, eps, thr1, thr5) -> (max_abs, max_rel, count1, count5) or None
 *
 *   n, b           float32 buffers of m elements (the NPU and bench piece)
 *   n64, b64, d64  float64 buffers of at least m elements, filled with n, b and n - b
 *   max_abs        max |n - b| in float64
 *   max_rel        max |(n - b) / b| in float32 arithmetic; where b == 0 both sides get eps added
 *                  first: |((n + eps) - (b + eps)) / (b + eps)| (msprobe's get_relative_err)
 *   count1/5       how many relative errors are < thr1 / < thr5 (float32 compares; NaN never counts)
 *   None           some n or b is inf or NaN: the caller's numpy path handles the masks
 *
 * Built without -ffast-math and with -ffp-contract=off: every operation is the IEEE one numpy does
 * on the same dtypes, so the results are the numpy path's, bit for bit (tests/test_fused_kernel.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float bits_f32(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static inline double bits_f64(uint64_t u) {
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
/* a copy for AVX2 machines, chosen when the module loads (64-bit integer compares need SSE4.2) */
#define VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define VECTOR_CLONES
#endif

/* float64 half: the converted vectors for BLAS, max |n - b| and whether an inf or NaN is present.
 * |d| is compared on its bit pattern (non-negative doubles order as their bits). */
VECTOR_CLONES
static int pass64(const float *restrict n, const float *restrict b, double *restrict n64, double *restrict b64,
                  double *restrict d64, int32_t m, uint64_t *max_abs_bits) {
    uint64_t abs_max = 0;
    uint32_t bad = 0;
    for (int32_t i = 0; i < m; i++) {
        float x = n[i], y = b[i];
        uint32_t xb, yb;
        memcpy(&xb, &x, 4);
        memcpy(&yb, &y, 4);
        bad |= ((xb & 0x7f800000u) == 0x7f800000u) | ((yb & 0x7f800000u) == 0x7f800000u);
        double xd = (double)x, yd = (double)y;
        double d = xd - yd;
        n64[i] = xd;
        b64[i] = yd;
        d64[i] = d;
        uint64_t ad;
        memcpy(&ad, &d, 8);
        ad &= 0x7fffffffffffffffull;
        abs_max = ad > abs_max ? ad : abs_max;
    }
    *max_abs_bits = abs_max;
    return bad != 0;
}

/* float32 half: relative errors, their maximum (on bit patterns: NaN above +inf) and two counts */
VECTOR_CLONES
static void pass32(const float *restrict n, const float *restrict b, int32_t m, float eps, float thr1, float thr5,
                   uint32_t *max_rel_bits, int32_t *c1, int32_t *c5) {
    int32_t rel_max = 0;
    int32_t k1 = 0, k5 = 0;
    for (int32_t i = 0; i < m; i++) {
        float x = n[i], y = b[i];
        float fb = y + eps;
        float plain = fabsf((x - y) / y);
        float fixed = fabsf(((x + eps) - fb) / fb);
        float r = y == 0.0f ? fixed : plain;
        int32_t rb;
        memcpy(&rb, &r, 4);
        rb &= 0x7fffffff;
        rel_max = rb > rel_max ? rb : rel_max;
        k1 += r < thr1;
        k5 += r < thr5;
    }
    *max_rel_bits = (uint32_t)rel_max;
    *c1 = k1;
    *c5 = k5;
}

/* The whole piece, in runs short enough for 32-bit counters and indices (the vectorisers like them). */
static int fused_pass(const float *n, const float *b, double *n64, double *b64, double *d64, Py_ssize_t m,
                      float eps, float thr1, float thr5, uint64_t *max_abs_bits, uint32_t *max_rel_bits,
                      Py_ssize_t *c1, Py_ssize_t *c5) {
    const Py_ssize_t run = (Py_ssize_t)1 << 30;
    uint64_t abs_max = 0;
    uint32_t rel_max = 0;
    Py_ssize_t k1 = 0, k5 = 0;
    for (Py_ssize_t lo = 0; lo < m; lo += run) {
        int32_t len = (int32_t)(m - lo < run ? m - lo : run);
        uint64_t a;
        uint32_t r;
        int32_t j1, j5;
        if (pass64(n + lo, b + lo, n64 + lo, b64 + lo, d64 + lo, len, &a)) {
            return 1;
        }
        pass32(n + lo, b + lo, len, eps, thr1, thr5, &r, &j1, &j5);
        abs_max = a > abs_max ? a : abs_max;
        rel_max = r > rel_max ? r : rel_max;
        k1 += j1;
        k5 += j5;
    }
    *max_abs_bits = abs_max;
    *max_rel_bits = rel_max;
    *c1 = k1;
    *c5 = k5;
    return 0;
}

static PyObject *fused_f32(PyObject *self, PyObject *args) {
    Py_buffer n, b, n64, b64, d64;
    float eps, thr1, thr5;
    if (!PyArg_ParseTuple(args, "y*y*w*w*w*fff", &n, &b, &n64, &b64, &d64, &eps, &thr1, &thr5)) {
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t m = n.len / (Py_ssize_t)sizeof(float);
    if (n.len % (Py_ssize_t)sizeof(float) || b.len != n.len || n64.len < m * (Py_ssize_t)sizeof(double) ||
        b64.len < n64.len || d64.len < n64.len) {
        PyErr_SetString(PyExc_ValueError, "fused_f32: buffer sizes do not agree");
        goto done;
    }
    {
        uint64_t abs_bits;
        uint32_t rel_bits;
        Py_ssize_t c1, c5;
        int bad;
        Py_BEGIN_ALLOW_THREADS
        bad = fused_pass((const float *)n.buf, (const float *)b.buf, (double *)n64.buf, (double *)b64.buf,
                         (double *)d64.buf, m, eps, thr1, thr5, &abs_bits, &rel_bits, &c1, &c5);
        Py_END_ALLOW_THREADS
        if (bad) {
            Py_INCREF(Py_None);
            result = Py_None;
        } else {
            /* m == 0 leaves both maxima at +0.0, numpy's max would raise: the caller never passes 0 */
            result = Py_BuildValue("ddnn", bits_f64(abs_bits), (double)bits_f32(rel_bits), c1, c5);
        }
    }
done:
    PyBuffer_Release(&n);
    PyBuffer_Release(&b);
    PyBuffer_Release(&n64);
    PyBuffer_Release(&b64);
    PyBuffer_Release(&d64);
    return result;
}

static PyMethodDef methods[] = {
    {"fused_f32", fused_f32, METH_VARARGS,
     "fused_f32(n, b, n64, b64, d64, eps, thr1, thr5) -> (max_abs, max_rel, count1, count5) or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "msprobe_core.default_plugins.tensor_metrics._fused",
                                    "The fused float32 metric pass of tensor mode (see _fused.c).", -1, methods};

PyMODINIT_FUNC PyInit__fused(void) { return PyModule_Create(&module); }
