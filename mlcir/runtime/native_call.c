/* The fast call path of mlcir.runtime.Function (see native_call.py).
 *
 * call(plan, args, outs) checks the numpy arguments against a plan (bytes of int64 words,
 * built once per function), writes the memref descriptors on the C stack, allocates the
 * results (uninitialised, 64-byte aligned) unless `outs` gives them, and calls the compiled
 * function's packed wrapper with the GIL released. Anything it does not accept as is (a wrong
 * dtype or shape, a non-contiguous array, too many arguments) returns NotImplemented: the
 * Python path then copies or raises its clear error. Descriptors live on the stack of each
 * call, so any number of threads may call at once.
 *
 * Plan words: fn address, argument count, result count; per argument: type number,
 * writable (0/1), rank, then rank dims (-1: any); per result: type number, itemsize, rank,
 * then rank dims (-1: any; such a result must be given in `outs`, as an array or as the
 * tuple of its shape, computed by the caller: the result is then allocated here).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <stdint.h>

#define MAX_MEMREFS 64
#define MAX_WORDS 2048
#define ALIGNMENT 64

typedef void (*packed_fn)(void **);

/* Whether `obj` is an array this plan entry accepts without a copy. */
static int accepts(PyObject *obj, int64_t typenum, int writable, int64_t rank,
                   const int64_t *dims) {
    if (!PyArray_Check(obj)) return 0;
    PyArrayObject *a = (PyArrayObject *)obj;
    if (PyArray_TYPE(a) != typenum || PyArray_NDIM(a) != rank) return 0;
    if (!PyArray_IS_C_CONTIGUOUS(a) || !PyArray_ISALIGNED(a) || !PyArray_ISNOTSWAPPED(a))
        return 0;
    if (writable && !PyArray_ISWRITEABLE(a)) return 0;
    const npy_intp *shape = PyArray_DIMS(a);
    for (int64_t d = 0; d < rank; d++)
        if (dims[d] >= 0 && dims[d] != shape[d]) return 0;
    return 1;
}

/* An uninitialised C-contiguous array whose data starts on an ALIGNMENT-byte boundary. */
static PyObject *aligned_empty(int64_t typenum, int64_t itemsize, int64_t rank,
                               const int64_t *dims) {
    npy_intp shape[NPY_MAXDIMS];
    npy_intp nbytes = itemsize;
    for (int64_t d = 0; d < rank; d++) {
        shape[d] = (npy_intp)dims[d];
        nbytes *= shape[d];
    }
    npy_intp raw_size = nbytes + ALIGNMENT;
    PyObject *raw = PyArray_EMPTY(1, &raw_size, NPY_UINT8, 0);
    if (!raw) return NULL;
    char *data = PyArray_DATA((PyArrayObject *)raw);
    data += (ALIGNMENT - ((uintptr_t)data % ALIGNMENT)) % ALIGNMENT;
    PyObject *array = PyArray_NewFromDescr(&PyArray_Type, PyArray_DescrFromType((int)typenum),
                                           (int)rank, shape, NULL, data, NPY_ARRAY_CARRAY, NULL);
    if (!array) {
        Py_DECREF(raw);
        return NULL;
    }
    if (PyArray_SetBaseObject((PyArrayObject *)array, raw) < 0) {  /* steals raw */
        Py_DECREF(array);
        return NULL;
    }
    return array;
}

/* Appends the descriptor of `a` at words[*used]; returns its address, NULL when full. */
static int64_t *describe(PyArrayObject *a, int64_t *words, int64_t *used) {
    int rank = PyArray_NDIM(a);
    if (*used + 3 + 2 * rank > MAX_WORDS) return NULL;
    int64_t *desc = words + *used;
    *used += 3 + 2 * rank;
    desc[0] = desc[1] = (int64_t)(intptr_t)PyArray_DATA(a);
    desc[2] = 0;
    const npy_intp *shape = PyArray_DIMS(a);
    int64_t stride = 1;
    for (int d = rank - 1; d >= 0; d--) {
        desc[3 + d] = shape[d];
        desc[3 + rank + d] = stride;
        stride *= shape[d];
    }
    return desc;
}

static PyObject *call(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    (void)self;
    if (argc != 3 || !PyBytes_Check(argv[0]) || !PyTuple_Check(argv[1])) {
        PyErr_SetString(PyExc_TypeError, "call(plan: bytes, args: tuple, outs: tuple | None)");
        return NULL;
    }
    const int64_t *plan = (const int64_t *)PyBytes_AS_STRING(argv[0]);
    PyObject *args = argv[1], *outs = argv[2];
    packed_fn fn = (packed_fn)(intptr_t)plan[0];
    int64_t n_args = plan[1], n_results = plan[2];
    if (PyTuple_GET_SIZE(args) != n_args || n_args + n_results > MAX_MEMREFS)
        Py_RETURN_NOTIMPLEMENTED;
    int given = outs != Py_None;
    if (given && (!PyTuple_Check(outs) || PyTuple_GET_SIZE(outs) != n_results))
        Py_RETURN_NOTIMPLEMENTED;

    int64_t words[MAX_WORDS];
    int64_t used = 0;
    void *descriptors[MAX_MEMREFS];
    void *packed[MAX_MEMREFS];
    const int64_t *p = plan + 3;
    for (int64_t i = 0; i < n_args; i++) {
        PyObject *arg = PyTuple_GET_ITEM(args, i);
        if (!accepts(arg, p[0], (int)p[1], p[2], p + 3)) Py_RETURN_NOTIMPLEMENTED;
        descriptors[i] = describe((PyArrayObject *)arg, words, &used);
        if (!descriptors[i]) Py_RETURN_NOTIMPLEMENTED;
        p += 3 + p[2];
    }
    PyObject *results[MAX_MEMREFS];
    for (int64_t r = 0; r < n_results; r++, p += 3 + p[2]) {
        PyObject *out = NULL;
        if (given && PyTuple_Check(PyTuple_GET_ITEM(outs, r))) {
            /* a shape: the result is allocated here at that shape */
            PyObject *shape = PyTuple_GET_ITEM(outs, r);
            int64_t dims[NPY_MAXDIMS];
            int ok = PyTuple_GET_SIZE(shape) == p[2] && p[2] <= NPY_MAXDIMS;
            for (int64_t d = 0; ok && d < p[2]; d++) {
                dims[d] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, d));
                ok = !PyErr_Occurred() && dims[d] >= 0 && (p[3 + d] < 0 || p[3 + d] == dims[d]);
            }
            PyErr_Clear();
            out = ok ? aligned_empty(p[0], p[1], p[2], dims) : NULL;
            if (ok && !out) {
                for (int64_t k = 0; k < r; k++) Py_DECREF(results[k]);
                return NULL;
            }
        } else if (given) {
            out = PyTuple_GET_ITEM(outs, r);
            if (!accepts(out, p[0], 1, p[2], p + 3)) out = NULL;
            else Py_INCREF(out);
        } else {
            for (int64_t d = 0; d < p[2]; d++)
                if (p[3 + d] < 0) {  /* a dynamic result: the caller sizes it */
                    for (int64_t k = 0; k < r; k++) Py_DECREF(results[k]);
                    Py_RETURN_NOTIMPLEMENTED;
                }
            out = aligned_empty(p[0], p[1], p[2], p + 3);
            if (!out) {
                for (int64_t k = 0; k < r; k++) Py_DECREF(results[k]);
                return NULL;
            }
        }
        results[r] = out;
        if (out) descriptors[n_args + r] = describe((PyArrayObject *)out, words, &used);
        if (!out || !descriptors[n_args + r]) {
            for (int64_t k = 0; k <= r; k++) Py_XDECREF(results[k]);
            Py_RETURN_NOTIMPLEMENTED;
        }
    }
    for (int64_t i = 0; i < n_args + n_results; i++) packed[i] = &descriptors[i];

    Py_BEGIN_ALLOW_THREADS
    fn(packed);
    Py_END_ALLOW_THREADS

    if (n_results == 0) Py_RETURN_NONE;
    if (n_results == 1) return results[0];
    PyObject *tuple = PyTuple_New(n_results);
    if (!tuple) {
        for (int64_t k = 0; k < n_results; k++) Py_DECREF(results[k]);
        return NULL;
    }
    for (int64_t k = 0; k < n_results; k++) PyTuple_SET_ITEM(tuple, k, results[k]);
    return tuple;
}

static PyMethodDef methods[] = {
    {"call", (PyCFunction)(void (*)(void))call, METH_FASTCALL,
     "call(plan, args, outs): run a compiled function on numpy arrays (NotImplemented: "
     "take the checked Python path)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_mlcir_native_call", NULL, -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__mlcir_native_call(void) {
    import_array();
    return PyModule_Create(&module);
}
