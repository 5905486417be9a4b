/* A fast path for loading a dump.json: parse the bytes and append the table's rows, in C.
 *
 * msprobe_core.load.flatten walks the decoded JSON in Python; on a 100k-entry statistics dump that is
 * ~1.4 s of json decoding and ~1 s of walking per side. This module does both in one pass over the
 * bytes, producing exactly the rows the Python walk produces, for the documents it fully understands.
 * Everything else makes it decline (feed() returns -1): the caller then loads the file with the
 * Python path, which either builds the same table or reports the error with its JSON path. So this
 * module never reports an input error itself, and only needs to recognise what it cannot handle:
 *
 *   - any syntax error, a string holding a backslash escape, a control character or a non-ASCII byte
 *     in the "data" member (the top-level members other than "data" are only delimited here and
 *     parsed by Python's json module);
 *   - a duplicate key in any object, objects of more than MAX_MEMBERS members, nesting deeper than
 *     MAX_DEPTH, numbers longer than MAX_NUMBER characters;
 *   - any field value the Python walk would refuse (a wrong type in a leaf, a bare value where an
 *     argument record is expected, a negative shape), or an md5 given as a number or empty;
 *   - anything the Python walk counts as not understood (dialects.Unrecognised) or reads as an older
 *     dumper's shape: a data key naming no forward/backward/parameters_grad call, an entry member
 *     other than the current argument members and the known metadata (grad_input of 1.0.1...), a
 *     leaf field or P2P op member outside the known ones.
 *
 * Scanner(columns, debug, other_leaf, constants, known)
 *   columns     the 12 row lists of the DumpTable, in model.ROW_COLUMNS order (the four statistics
 *               columns are left empty: see Scanner.stats)
 *   debug       whether the file is a debug.json (every key is one entry, walked as "debug")
 *   other_leaf  other_leaf(leaf_dict, name, md5) -> (dtype, shape, max, min, mean, norm, md5) for a
 *               leaf without "dtype" that is not a plain scalar (sizes, slices, process groups...)
 *   constants   (input, output, parameters, parameters_grad, debug, "-1", crc32 of "", "True", "False",
 *                "Nan")
 *   known       (entry members: ENTRY_KEYS' and the metadata ones, leaf fields, P2P op members): tuples of
 *               str, from dialects.py
 * Scanner.feed(buffer, final) -> bytes consumed (the caller keeps the rest and appends the next
 *   block), or -1: decline. Then Scanner.header: [(key, bytes of the value, None for "data")] of the
 *   top-level members; Scanner.apis: (keys, prefixes, calls, directions, first rows) of the entries
 *   document.split_api_key keeps; Scanner.stats: the Max, Min, Mean and Norm columns, each as
 *   (kinds, float64 values, {row: value}) for columns.StatCells; Scanner.md5_seen: whether a leaf
 *   carried an md5.
 *
 * classify_statistics(values): the statistics the scanner (or the Python walk) produced, classified
 * for the metric stage in one pass (stats_metrics.StatColumn).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h> /* PyMemberDef (Scanner.slot_objects); its T_* names are this file's node types */
#include <stdint.h>

enum { SLOT_OBJECT = T_OBJECT_EX, SLOT_READONLY = READONLY };
#undef T_SHORT
#undef T_INT
#undef T_LONG
#undef T_FLOAT
#undef T_DOUBLE
#undef T_STRING
#undef T_OBJECT
#undef T_CHAR
#undef T_BYTE
#undef T_UBYTE
#undef T_USHORT
#undef T_UINT
#undef T_ULONG
#undef T_STRING_INPLACE
#undef T_BOOL
#undef T_OBJECT_EX
#undef T_LONGLONG
#undef T_ULONGLONG
#undef T_PYSSIZET
#undef T_NONE
#include <stdio.h>
#include <string.h>

#define MAX_DEPTH 100
#define MAX_MEMBERS 64
#define MAX_NUMBER 64

enum { T_OBJ, T_ARR, T_STR, T_INT, T_FLT, T_NAN, T_INF, T_NINF, T_TRUE, T_FALSE, T_NULL };
/* parse outcomes */
enum { OK = 0, END_OF_BUFFER = 1, DECLINE = 2, ERROR = 3 };
/* top-level states */
enum { S_START, S_TOP_FIRST, S_TOP_KEY, S_TOP_AFTER, S_DATA_FIRST, S_DATA_MEMBER, S_DATA_AFTER, S_END };
enum { C_INPUT, C_OUTPUT, C_PARAMETERS, C_PGRAD, C_DEBUG, C_MINUS1, C_EMPTY_CRC, C_TRUE, C_FALSE, C_NAN,
       N_CONST };
enum { COL_API, COL_NAME, COL_STATE, COL_DTYPE, COL_SHAPE, COL_RG, COL_MAX, COL_MIN, COL_MEAN, COL_NORM,
       COL_MD5, COL_DN, N_COL };

/* classify_statistics: the kind codes of text/statcells.py (FLOAT...) */
enum { KIND_FLOAT, KIND_INT, KIND_STR, KIND_NONE, KIND_OTHER };
enum { API_KEY, API_PREFIX, API_CALL, API_DIRECTION, API_FIRST_ROW, N_API };
/* str(type(value)) of a scalar non-tensor value, by node type */
enum { TN_FLOAT, TN_INT, TN_BOOL, TN_NONE, TN_STR, N_TYPE_NAMES };
static const char *TYPE_NAMES[N_TYPE_NAMES] = {"<class 'float'>", "<class 'int'>", "<class 'bool'>",
                                               "<class 'NoneType'>", "<class 'str'>"};

typedef struct {
    uint8_t type;
    Py_ssize_t start, len;   /* a string's content without quotes, a number's token */
    Py_ssize_t kstart, klen; /* the member key when the parent is an object */
    int32_t first, next;     /* first child, next sibling; -1: none */
} Node;

/* strings that repeat (dtypes, shape texts): one object per distinct text */
typedef struct {
    char *text;
    Py_ssize_t len;
    uint64_t hash;
    PyObject *obj;
} Slot;

typedef struct {
    Slot *slots;
    size_t cap, used;
} Cache;

typedef struct {
    char *buf;
    Py_ssize_t len, cap;
} Text;

/* a statistics column: kind code and float64 value per row, the non-float values by row */
typedef struct {
    int8_t *kind;
    double *num;
    Py_ssize_t len, cap;
    PyObject *others;
} StatBuf;

/* a set of member names, as UTF-8 texts borrowed from the tuple the Scanner holds */
typedef struct {
    const char **text;
    Py_ssize_t *len;
    Py_ssize_t n;
} Words;

enum { K_ENTRY, K_LEAF, K_P2P, N_KNOWN };

/* a growable array of bytes (the index's columns) */
typedef struct {
    char *p;
    Py_ssize_t len, cap;
} Buf;

/* distinct texts, each given the next id (0, 1, ...): the texts in one blob, `offs` their starts (int64) */
typedef struct {
    int32_t *slots; /* id + 1 per slot, 0: free */
    uint64_t *hashes;
    size_t cap;
    int32_t n;
    Buf blob, offs;
} Intern;

/* the index's columns: per entry (API) offset, key hash, head hash, backward rank, rows; per row suffix id,
 * dtype id, statistics flags */
enum { IX_OFFSET, IX_KEYHASH, IX_HEAD, IX_RANK, IX_NROWS, IX_SUFFIX, IX_DTYPE, IX_FLAGS, N_IX };

typedef struct {
    PyObject_HEAD
    PyObject *cols[N_COL];
    PyObject *consts[N_CONST];
    PyObject *other_leaf;
    PyObject *seen;   /* data keys met so far */
    PyObject *header; /* [(key, bytes)] */
    int debug, state, md5_seen;
    Py_ssize_t rows;
    /* per-feed parse state */
    const unsigned char *s;
    Py_ssize_t n, pos;
    Node *nodes;
    int32_t used, cap;
    Text name;
    Cache dtypes, shapes;
    PyObject *api_idx; /* the row_api value of the current entry */
    Py_ssize_t n_apis;
    PyObject *api_cols[N_API]; /* key, prefix, call, direction, first row of each recorded entry */
    Cache words;               /* prefixes, calls, directions */
    Cache crcs;                /* crc32 texts of non-tensor values */
    PyObject *type_names[N_TYPE_NAMES];
    PyObject *empty_shape;
    StatBuf stats[4]; /* Max, Min, Mean, Norm */
    PyObject *known_obj; /* the `known` tuple: keeps the texts of `known` alive */
    Words known[N_KNOWN];
    /* index mode (see "the index" below): no Python object per row */
    int index_mode, renumber;
    long long base;     /* file offset of the first byte of the buffer being fed */
    long long data_end; /* file offset of the '}' that closes "data" */
    Py_ssize_t klen;    /* length of the current entry's key (the first bytes of `name`) */
    Buf ix[N_IX];
    Intern suffixes, ix_dtypes, prefixes;
    Buf prefix_counts; /* int32 per prefix id: backward calls met so far */
    Text scratch;
} Scanner;

/* ------------------------------------------------------------------ small helpers */

static uint64_t hash_bytes(const char *p, Py_ssize_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (Py_ssize_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
    return h;
}

static void cache_free(Cache *c) {
    for (size_t i = 0; i < c->cap; i++) {
        if (c->slots[i].obj) {
            Py_DECREF(c->slots[i].obj);
            PyMem_Free(c->slots[i].text);
        }
    }
    PyMem_Free(c->slots);
    c->slots = NULL;
    c->cap = c->used = 0;
}

static int cache_grow(Cache *c) {
    size_t cap = c->cap ? c->cap * 2 : 64;
    Slot *slots = PyMem_Calloc(cap, sizeof(Slot));
    if (!slots) return -1;
    for (size_t i = 0; i < c->cap; i++) {
        Slot *old = &c->slots[i];
        if (!old->obj) continue;
        size_t j = old->hash & (cap - 1);
        while (slots[j].obj) j = (j + 1) & (cap - 1);
        slots[j] = *old;
    }
    PyMem_Free(c->slots);
    c->slots = slots;
    c->cap = cap;
    return 0;
}

/* a new reference to the one str object of this ASCII text; past MAX_PROBES slots a new object (the
 * hash is not keyed: texts made to collide must not make each look-up slower, sharing is only a saving) */
#define MAX_PROBES 32

static PyObject *cache_get(Cache *c, const char *text, Py_ssize_t len) {
    if ((c->used + 1) * 2 > c->cap && cache_grow(c) < 0) return PyErr_NoMemory();
    uint64_t h = hash_bytes(text, len);
    size_t j = h & (c->cap - 1);
    int probes = 0;
    while (c->slots[j].obj) {
        Slot *slot = &c->slots[j];
        if (slot->hash == h && slot->len == len && memcmp(slot->text, text, len) == 0) {
            Py_INCREF(slot->obj);
            return slot->obj;
        }
        if (++probes > MAX_PROBES) return PyUnicode_FromStringAndSize(text, len);
        j = (j + 1) & (c->cap - 1);
    }
    char *copy = PyMem_Malloc(len ? len : 1);
    if (!copy) return PyErr_NoMemory();
    memcpy(copy, text, len);
    PyObject *obj = PyUnicode_FromStringAndSize(text, len);
    if (!obj) {
        PyMem_Free(copy);
        return NULL;
    }
    c->slots[j].text = copy;
    c->slots[j].len = len;
    c->slots[j].hash = h;
    c->slots[j].obj = obj;
    c->used++;
    Py_INCREF(obj);
    return obj;
}

static int text_reserve(Text *t, Py_ssize_t extra) {
    if (t->len + extra <= t->cap) return 0;
    Py_ssize_t cap = t->cap ? t->cap : 256;
    while (cap < t->len + extra) cap *= 2;
    char *buf = PyMem_Realloc(t->buf, cap);
    if (!buf) {
        PyErr_NoMemory();
        return -1;
    }
    t->buf = buf;
    t->cap = cap;
    return 0;
}

static int text_add(Text *t, const char *p, Py_ssize_t n) {
    if (text_reserve(t, n) < 0) return -1;
    memcpy(t->buf + t->len, p, n);
    t->len += n;
    return 0;
}

/* ------------------------------------------------------------------ the index's buffers, hashes and ids */

#define FNV_OFFSET 1469598103934665603ULL
#define FNV_PRIME 1099511628211ULL

/* 64-bit FNV-1a of `n` more bytes from the state `h` (the hash of a concatenation is the state carried on) */
static inline uint64_t fnv_more(uint64_t h, const char *p, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * FNV_PRIME;
    return h;
}

/* the final mix of a key hash (splitmix64's): FNV's low bits alone are poor */
static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static int buf_add(Buf *b, const void *x, Py_ssize_t n) {
    if (b->len + n > b->cap) {
        Py_ssize_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        char *p = PyMem_Realloc(b->p, (size_t)cap);
        if (!p) {
            PyErr_NoMemory();
            return -1;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, x, (size_t)n);
    b->len += n;
    return 0;
}

static void buf_free(Buf *b) {
    PyMem_Free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

static void intern_free(Intern *t) {
    PyMem_Free(t->slots);
    PyMem_Free(t->hashes);
    t->slots = NULL;
    t->hashes = NULL;
    t->cap = 0;
    t->n = 0;
    buf_free(&t->blob);
    buf_free(&t->offs);
}

static const char *intern_text(Intern *t, int32_t id, Py_ssize_t *len) {
    int64_t *offs = (int64_t *)t->offs.p;
    int64_t end = id + 1 < t->n ? offs[id + 1] : (int64_t)t->blob.len;
    *len = (Py_ssize_t)(end - offs[id]);
    return t->blob.p + offs[id];
}

static int intern_grow(Intern *t) {
    size_t cap = t->cap ? t->cap * 2 : 256;
    int32_t *slots = PyMem_Calloc(cap, sizeof(int32_t));
    uint64_t *hashes = PyMem_Calloc(cap, sizeof(uint64_t));
    if (!slots || !hashes) {
        PyMem_Free(slots);
        PyMem_Free(hashes);
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slots[i]) continue;
        size_t j = t->hashes[i] & (cap - 1);
        while (slots[j]) j = (j + 1) & (cap - 1);
        slots[j] = t->slots[i];
        hashes[j] = t->hashes[i];
    }
    PyMem_Free(t->slots);
    PyMem_Free(t->hashes);
    t->slots = slots;
    t->hashes = hashes;
    t->cap = cap;
    return 0;
}

/* the id of a text (a new one for a text not seen yet); -1 on failure. Past MAX_PROBES slots a text gets a
 * new id without being entered: ids are a saving, two ids of one text mean the same (texts made to collide
 * must not make each look-up slower) */
static int32_t intern_id(Intern *t, const char *text, Py_ssize_t len) {
    if (((size_t)t->n + 1) * 2 > t->cap && intern_grow(t) < 0) return -1;
    uint64_t h = mix64(fnv_more(FNV_OFFSET, text, len));
    size_t j = h & (t->cap - 1);
    int probes = 0, enter = 1;
    while (t->slots[j]) {
        if (t->hashes[j] == h) {
            Py_ssize_t n;
            const char *have = intern_text(t, t->slots[j] - 1, &n);
            if (n == len && memcmp(have, text, (size_t)len) == 0) return t->slots[j] - 1;
        }
        if (++probes > MAX_PROBES) {
            enter = 0;
            break;
        }
        j = (j + 1) & (t->cap - 1);
    }
    int64_t start = (int64_t)t->blob.len;
    if (t->n == INT32_MAX - 1 || buf_add(&t->offs, &start, 8) < 0 || buf_add(&t->blob, text, len) < 0) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return -1;
    }
    if (enter) {
        t->slots[j] = t->n + 1;
        t->hashes[j] = h;
    }
    return t->n++;
}

static inline int is_ws(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* ------------------------------------------------------------------ the strict parser (data entries) */

static inline int skip_ws(Scanner *sc) {
    while (sc->pos < sc->n && is_ws(sc->s[sc->pos])) sc->pos++;
    return sc->pos < sc->n ? OK : END_OF_BUFFER;
}

static int32_t new_node(Scanner *sc, uint8_t type) {
    if (sc->used == sc->cap) {
        if (sc->cap > INT32_MAX / 2) {
            PyErr_NoMemory(); /* an entry of a billion values */
            return -1;
        }
        int32_t cap = sc->cap ? sc->cap * 2 : 1024;
        Node *nodes = PyMem_Realloc(sc->nodes, (size_t)cap * sizeof(Node));
        if (!nodes) {
            PyErr_NoMemory();
            return -1;
        }
        sc->nodes = nodes;
        sc->cap = cap;
    }
    Node *nd = &sc->nodes[sc->used];
    nd->type = type;
    nd->start = nd->len = nd->kstart = nd->klen = 0;
    nd->first = nd->next = -1;
    return sc->used++;
}

/* a string without escapes, control characters or non-ASCII bytes; sc->pos at the opening quote */
static int scan_string(Scanner *sc, Py_ssize_t *start, Py_ssize_t *len) {
    const unsigned char *s = sc->s;
    Py_ssize_t i = sc->pos + 1, n = sc->n;
    const unsigned char *q = memchr(s + i, '"', n - i);
    if (!q) return END_OF_BUFFER;
    Py_ssize_t end = q - s;
    for (Py_ssize_t k = i; k < end; k++) {
        unsigned char c = s[k];
        if (c < 0x20 || c >= 0x80 || c == '\\') return DECLINE;
    }
    *start = i;
    *len = end - i;
    sc->pos = end + 1;
    return OK;
}

static int match_word(Scanner *sc, const char *word, Py_ssize_t wlen) {
    Py_ssize_t avail = sc->n - sc->pos;
    if (avail < wlen) {
        return memcmp(sc->s + sc->pos, word, avail) == 0 ? END_OF_BUFFER : DECLINE;
    }
    if (memcmp(sc->s + sc->pos, word, wlen) != 0) return DECLINE;
    sc->pos += wlen;
    return OK;
}

/* a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][-+]?[0-9]+)? */
static int scan_number(Scanner *sc, uint8_t *type) {
    const unsigned char *s = sc->s;
    Py_ssize_t i = sc->pos, n = sc->n;
    int is_float = 0;
#define NEED(cond)                                  \
    do {                                            \
        if (i >= n) return END_OF_BUFFER;           \
        if (!(cond)) return DECLINE;                \
    } while (0)
    if (s[i] == '-') i++;
    NEED(s[i] >= '0' && s[i] <= '9');
    if (s[i] == '0') {
        i++;
    } else {
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    }
    if (i < n && s[i] == '.') {
        is_float = 1;
        i++;
        NEED(s[i] >= '0' && s[i] <= '9');
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        is_float = 1;
        i++;
        NEED(1);
        if (s[i] == '+' || s[i] == '-') i++;
        NEED(s[i] >= '0' && s[i] <= '9');
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    }
#undef NEED
    if (i >= n) return END_OF_BUFFER; /* the number may go on in the next block */
    if (i - sc->pos > MAX_NUMBER) return DECLINE;
    *type = is_float ? T_FLT : T_INT;
    sc->pos = i;
    return OK;
}

static int parse_value(Scanner *sc, int depth, int32_t *out);

static int parse_container(Scanner *sc, int depth, int is_obj, int32_t self) {
    int r;
    int32_t last = -1, count = 0;
    sc->pos++; /* the opening bracket */
    if ((r = skip_ws(sc)) != OK) return r;
    if (sc->s[sc->pos] == (is_obj ? '}' : ']')) {
        sc->pos++;
        return OK;
    }
    for (;;) {
        Py_ssize_t kstart = 0, klen = 0;
        if (is_obj) {
            if (sc->s[sc->pos] != '"') return DECLINE;
            if ((r = scan_string(sc, &kstart, &klen)) != OK) return r;
            /* a repeated key keeps its first position but its last value in Python: not handled here */
            for (int32_t c = sc->nodes[self].first; c >= 0; c = sc->nodes[c].next) {
                Node *k = &sc->nodes[c];
                if (k->klen == klen && memcmp(sc->s + k->kstart, sc->s + kstart, klen) == 0) return DECLINE;
            }
            if ((r = skip_ws(sc)) != OK) return r;
            if (sc->s[sc->pos] != ':') return DECLINE;
            sc->pos++;
            if ((r = skip_ws(sc)) != OK) return r;
        }
        if (++count > MAX_MEMBERS && is_obj) return DECLINE;
        int32_t child;
        if ((r = parse_value(sc, depth + 1, &child)) != OK) return r;
        sc->nodes[child].kstart = kstart;
        sc->nodes[child].klen = klen;
        if (last < 0)
            sc->nodes[self].first = child;
        else
            sc->nodes[last].next = child;
        last = child;
        if ((r = skip_ws(sc)) != OK) return r;
        unsigned char c = sc->s[sc->pos++];
        if (c == ',') {
            if ((r = skip_ws(sc)) != OK) return r;
            continue;
        }
        if (c == (is_obj ? '}' : ']')) return OK;
        return DECLINE;
    }
}

/* sc->pos at the first character of the value (no blank) */
static int parse_value(Scanner *sc, int depth, int32_t *out) {
    if (depth > MAX_DEPTH) return DECLINE;
    if (sc->pos >= sc->n) return END_OF_BUFFER;
    unsigned char c = sc->s[sc->pos];
    int r;
    int32_t idx;
    uint8_t type;
    switch (c) {
    case '{':
    case '[':
        if ((idx = new_node(sc, c == '{' ? T_OBJ : T_ARR)) < 0) return ERROR;
        *out = idx;
        return parse_container(sc, depth, c == '{', idx);
    case '"': {
        Py_ssize_t start, len;
        if ((r = scan_string(sc, &start, &len)) != OK) return r;
        if ((idx = new_node(sc, T_STR)) < 0) return ERROR;
        sc->nodes[idx].start = start;
        sc->nodes[idx].len = len;
        *out = idx;
        return OK;
    }
    case 't':
        r = match_word(sc, "true", 4), type = T_TRUE;
        break;
    case 'f':
        r = match_word(sc, "false", 5), type = T_FALSE;
        break;
    case 'n':
        r = match_word(sc, "null", 4), type = T_NULL;
        break;
    case 'N':
        r = match_word(sc, "NaN", 3), type = T_NAN;
        break;
    case 'I':
        r = match_word(sc, "Infinity", 8), type = T_INF;
        break;
    default: {
        Py_ssize_t start = sc->pos;
        if (c == '-' && sc->pos + 1 < sc->n && sc->s[sc->pos + 1] == 'I') {
            sc->pos++;
            r = match_word(sc, "Infinity", 8), type = T_NINF;
            if (r != OK) sc->pos = start;
            break;
        }
        if (c == '-' && sc->pos + 1 >= sc->n) return END_OF_BUFFER;
        if (c != '-' && (c < '0' || c > '9')) return DECLINE;
        if ((r = scan_number(sc, &type)) != OK) return r;
        if ((idx = new_node(sc, type)) < 0) return ERROR;
        sc->nodes[idx].start = start;
        sc->nodes[idx].len = sc->pos - start;
        *out = idx;
        return OK;
    }
    }
    if (r != OK) return r;
    if ((idx = new_node(sc, type)) < 0) return ERROR;
    *out = idx;
    return OK;
}

/* ------------------------------------------------------------------ the lenient skipper (header members) */

/* delimits a value for Python's json module to parse; only needs to find where it ends */
static int skip_value(Scanner *sc, int depth) {
    if (depth > MAX_DEPTH) return DECLINE;
    const unsigned char *s = sc->s;
    Py_ssize_t n = sc->n;
    if (sc->pos >= n) return END_OF_BUFFER;
    unsigned char c = s[sc->pos];
    int r;
    if (c == '"') {
        Py_ssize_t i = sc->pos + 1;
        while (i < n && s[i] != '"') i += (s[i] == '\\') ? 2 : 1;
        if (i >= n) return END_OF_BUFFER;
        sc->pos = i + 1;
        return OK;
    }
    if (c == '{' || c == '[') {
        unsigned char close = c == '{' ? '}' : ']';
        sc->pos++;
        if ((r = skip_ws(sc)) != OK) return r;
        if (s[sc->pos] == close) {
            sc->pos++;
            return OK;
        }
        for (;;) {
            if (c == '{') {
                if (s[sc->pos] != '"') return DECLINE;
                if ((r = skip_value(sc, depth + 1)) != OK) return r;
                if ((r = skip_ws(sc)) != OK) return r;
                if (s[sc->pos++] != ':') return DECLINE;
                if ((r = skip_ws(sc)) != OK) return r;
            }
            if ((r = skip_value(sc, depth + 1)) != OK) return r;
            if ((r = skip_ws(sc)) != OK) return r;
            unsigned char d = s[sc->pos++];
            if (d == close) return OK;
            if (d != ',') return DECLINE;
            if ((r = skip_ws(sc)) != OK) return r;
        }
    }
    /* a number or a word: the run of characters that may belong to one */
    Py_ssize_t i = sc->pos;
    while (i < n && ((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
                     s[i] == '-' || s[i] == '+' || s[i] == '.'))
        i++;
    if (i >= n) return END_OF_BUFFER;
    if (i == sc->pos) return DECLINE;
    sc->pos = i;
    return OK;
}

/* ------------------------------------------------------------------ the walk (flatten._build_walk, in C) */

static Node *child(Scanner *sc, Node *obj, const char *key) {
    Py_ssize_t klen = (Py_ssize_t)strlen(key);
    for (int32_t c = obj->first; c >= 0; c = sc->nodes[c].next) {
        Node *k = &sc->nodes[c];
        if (k->klen == klen && memcmp(sc->s + k->kstart, key, klen) == 0) return k;
    }
    return NULL;
}

static int in_words(const Words *w, const unsigned char *p, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < w->n; i++)
        if (w->len[i] == n && memcmp(w->text[i], p, n) == 0) return 1;
    return 0;
}

/* whether every member key of the object `obj` is one of `w` (or of `more`, when given) */
static int keys_known(Scanner *sc, Node *obj, const Words *w, const Words *more) {
    for (int32_t c = obj->first; c >= 0; c = sc->nodes[c].next) {
        Node *k = &sc->nodes[c];
        if (!in_words(w, sc->s + k->kstart, k->klen) && !(more && in_words(more, sc->s + k->kstart, k->klen)))
            return 0;
    }
    return 1;
}

static int node_is_str(Scanner *sc, Node *nd, const char *text) {
    Py_ssize_t len = (Py_ssize_t)strlen(text);
    return nd && nd->type == T_STR && nd->len == len && memcmp(sc->s + nd->start, text, len) == 0;
}

static PyObject *node_str(Scanner *sc, Node *nd) {
    return PyUnicode_FromStringAndSize((const char *)sc->s + nd->start, nd->len);
}

/* 10^0 .. 10^22: every one an exact double */
static const double EXACT_POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                       1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

#ifdef __SIZEOF_INT128__
typedef unsigned __int128 u128;

static int bits128(u128 x) {
    uint64_t hi = (uint64_t)(x >> 64);
    return hi ? 128 - __builtin_clzll(hi) : 64 - __builtin_clzll((uint64_t)x);
}

/* q (and a nonzero remainder below it: sticky) times 2^e2, rounded to nearest even at 53 bits; 0 when q holds too
   few bits to decide the rounding or the double would not be normal */
static int round53(u128 q, int sticky, int e2, double *out) {
    if (q == 0) return 0;
    int b = bits128(q);
    if (b <= 53) {
        if (sticky || e2 + b - 1 < -1022 || e2 + b - 1 > 1023) return 0;
        *out = ldexp((double)(uint64_t)q, e2);
        return 1;
    }
    int drop = b - 53;
    u128 r = q >> drop, rest = q & (((u128)1 << drop) - 1), half = (u128)1 << (drop - 1);
    if (rest > half || (rest == half && (sticky || (r & 1)))) r++;
    if (r == ((u128)1 << 53)) { r >>= 1; drop++; }
    if (e2 + drop + 52 < -1022 || e2 + drop + 52 > 1023) return 0;
    *out = ldexp((double)(uint64_t)r, e2 + drop);
    return 1;
}

/* m * 10^exp10, correctly rounded, by exact integer arithmetic in 128 bits: m shifted as far left as it goes, then
   divided by the power of ten (quotient and remainder decide the rounding); 0 where that does not suffice */
static int exact_double(uint64_t m, int exp10, double *out) {
    if (m == 0 || exp10 < -38 || exp10 > 38) return 0;
    u128 pow10 = 1;
    for (int k = exp10 < 0 ? -exp10 : exp10; k > 0; k--) pow10 *= 10;
    if (exp10 >= 0)
        return pow10 <= (~(u128)0) / m && round53((u128)m * pow10, 0, 0, out);
    int shift = 127 - (64 - __builtin_clzll(m));
    u128 n = (u128)m << shift;
    return round53(n / pow10, n % pow10 != 0, -shift, out);
}
#else
static int exact_double(uint64_t m, int exp10, double *out) { (void)m; (void)exp10; (void)out; return 0; }
#endif

/* The double of a JSON number's text, as strtod would give it, where that is cheap: one IEEE operation (Clinger's
   fast path: its digits, at most 2^53 as an integer, times or over an exact power of ten, 10^22 at most), else up to
   19 digits in exact 128-bit integer arithmetic (repr's 17 digits mostly need it); 0 when the text needs the full
   conversion, which works in big integers. */
static int fast_double(const unsigned char *p, Py_ssize_t len, double *out) {
    const unsigned char *end = p + len;
    int neg = 0;
    uint64_t m = 0;
    int digits = 0, exp10 = 0;
    if (p < end && *p == '-') { neg = 1; p++; }
    for (; p < end && *p >= '0' && *p <= '9'; p++) {
        if (m || *p != '0') digits++;
        if (digits > 19) return 0;
        m = m * 10 + (uint64_t)(*p - '0');
    }
    if (p < end && *p == '.') {
        for (p++; p < end && *p >= '0' && *p <= '9'; p++) {
            if (m || *p != '0') digits++;
            if (digits > 19) return 0;
            m = m * 10 + (uint64_t)(*p - '0');
            exp10--;
        }
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        int eneg = 0, e = 0;
        p++;
        if (p < end && (*p == '+' || *p == '-')) eneg = *p++ == '-';
        for (; p < end && *p >= '0' && *p <= '9'; p++) {
            if (e > 1000) return 0;
            e = e * 10 + (*p - '0');
        }
        exp10 += eneg ? -e : e;
    }
    if (p != end) return 0;
    double v = (double)m;
    if (m <= ((uint64_t)1 << 53) && exp10 >= -22 && exp10 <= 22)
        v = exp10 < 0 ? v / EXACT_POW10[-exp10] : v * EXACT_POW10[exp10];
    else if (!exact_double(m, exp10, &v))
        return 0;
    *out = neg ? -v : v;
    return 1;
}

static PyObject *number(Scanner *sc, Node *nd) {
    double fast;
    if (nd->type != T_INT && fast_double(sc->s + nd->start, nd->len, &fast)) return PyFloat_FromDouble(fast);
    char buf[MAX_NUMBER + 1];
    memcpy(buf, sc->s + nd->start, nd->len);
    buf[nd->len] = '\0';
    if (nd->type == T_INT) return PyLong_FromString(buf, NULL, 10);
    char *end;
    double v = PyOS_string_to_double(buf, &end, NULL);
    if (v == -1.0 && PyErr_Occurred()) return NULL;
    return PyFloat_FromDouble(v);
}

/* the Python object json.loads gives for a node */
static PyObject *to_python(Scanner *sc, Node *nd) {
    switch (nd->type) {
    case T_OBJ: {
        PyObject *d = PyDict_New();
        if (!d) return NULL;
        for (int32_t c = nd->first; c >= 0; c = sc->nodes[c].next) {
            Node *k = &sc->nodes[c];
            PyObject *key = PyUnicode_FromStringAndSize((const char *)sc->s + k->kstart, k->klen);
            PyObject *val = key ? to_python(sc, k) : NULL;
            if (!val || PyDict_SetItem(d, key, val) < 0) {
                Py_XDECREF(key);
                Py_XDECREF(val);
                Py_DECREF(d);
                return NULL;
            }
            Py_DECREF(key);
            Py_DECREF(val);
        }
        return d;
    }
    case T_ARR: {
        PyObject *l = PyList_New(0);
        if (!l) return NULL;
        for (int32_t c = nd->first; c >= 0; c = sc->nodes[c].next) {
            PyObject *val = to_python(sc, &sc->nodes[c]);
            if (!val || PyList_Append(l, val) < 0) {
                Py_XDECREF(val);
                Py_DECREF(l);
                return NULL;
            }
            Py_DECREF(val);
        }
        return l;
    }
    case T_STR:
        return node_str(sc, nd);
    case T_INT:
    case T_FLT:
        return number(sc, nd);
    case T_NAN:
        return PyFloat_FromDouble(Py_NAN);
    case T_INF:
        return PyFloat_FromDouble(Py_HUGE_VAL);
    case T_NINF:
        return PyFloat_FromDouble(-Py_HUGE_VAL);
    case T_TRUE:
        Py_RETURN_TRUE;
    case T_FALSE:
        Py_RETURN_FALSE;
    default:
        Py_RETURN_NONE;
    }
}

/* one more statistic in column k, kept as the metric stage reads it (kind, float64, the object itself
 * unless a float or None); DECLINE for an int too large for a double (left to the Python walk) */
static int stat_push(Scanner *sc, int k, PyObject *v) {
    StatBuf *b = &sc->stats[k];
    if (b->len == b->cap) {
        Py_ssize_t cap = b->cap ? b->cap * 2 : 4096;
        int8_t *kind = PyMem_Realloc(b->kind, (size_t)cap);
        if (kind) b->kind = kind;
        double *num = kind ? PyMem_Realloc(b->num, (size_t)cap * sizeof(double)) : NULL;
        if (!num) {
            PyErr_NoMemory();
            return ERROR;
        }
        b->num = num;
        b->cap = cap;
    }
    int8_t kind;
    double num = Py_NAN;
    int keep = 1;
    if (PyFloat_CheckExact(v)) {
        kind = KIND_FLOAT, num = PyFloat_AS_DOUBLE(v), keep = 0;
    } else if (PyLong_CheckExact(v)) {
        num = PyLong_AsDouble(v);
        if (num == -1.0 && PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return ERROR;
            PyErr_Clear();
            return DECLINE;
        }
        kind = KIND_INT;
    } else if (v == Py_None) {
        kind = KIND_NONE, keep = 0;
    } else {
        kind = PyUnicode_CheckExact(v) ? KIND_STR : KIND_OTHER;
    }
    if (keep) {
        PyObject *key = PyLong_FromSsize_t(b->len);
        int bad = !key || PyDict_SetItem(b->others, key, v) < 0;
        Py_XDECREF(key);
        if (bad) return ERROR;
    }
    b->kind[b->len] = kind;
    b->num[b->len] = num;
    b->len++;
    return OK;
}

/* steals every reference in vals; OK, DECLINE or ERROR */
static int add_row(Scanner *sc, PyObject **vals) {
    int r = OK;
    for (int i = 0; i < N_COL; i++) {
        if (r == OK) {
            if (!vals[i])
                r = ERROR;
            else if (i >= COL_MAX && i <= COL_NORM)
                r = stat_push(sc, i - COL_MAX, vals[i]);
            else if (PyList_Append(sc->cols[i], vals[i]) < 0)
                r = ERROR;
        }
        Py_XDECREF(vals[i]);
    }
    if (r == OK) sc->rows++;
    return r;
}

#define CONST(i) (Py_INCREF(sc->consts[i]), sc->consts[i])

static PyObject *current_name(Scanner *sc) { return PyUnicode_FromStringAndSize(sc->name.buf, sc->name.len); }

static int add_null(Scanner *sc, PyObject *state) {
    PyObject *vals[N_COL];
    Py_INCREF(sc->api_idx);
    vals[COL_API] = sc->api_idx;
    vals[COL_NAME] = current_name(sc);
    Py_INCREF(state);
    vals[COL_STATE] = state;
    for (int i = COL_DTYPE; i <= COL_MD5; i++) {
        Py_INCREF(Py_None);
        vals[i] = Py_None;
    }
    vals[COL_DN] = CONST(C_MINUS1);
    return add_row(sc, vals);
}

/* a statistic as the Python walk keeps it: DECLINE for a container; *out a new reference */
static int stat_value(Scanner *sc, Node *nd, PyObject **out) {
    if (!nd) {
        Py_INCREF(Py_None);
        *out = Py_None;
        return OK;
    }
    switch (nd->type) {
    case T_OBJ:
    case T_ARR:
        return DECLINE;
    case T_NAN:
        *out = CONST(C_NAN);
        return OK;
    case T_TRUE:
        *out = CONST(C_TRUE);
        return OK;
    case T_FALSE:
        *out = CONST(C_FALSE);
        return OK;
    default:
        *out = to_python(sc, nd);
        return *out ? OK : ERROR;
    }
}

/* the text Python's str() gives a list of non-negative ints; DECLINE for anything else */
static int shape_text(Scanner *sc, Node *shape, PyObject **out) {
    char buf[512];
    Py_ssize_t len = 0;
    buf[len++] = '[';
    int first = 1;
    for (int32_t c = shape->first; c >= 0; c = sc->nodes[c].next) {
        Node *d = &sc->nodes[c];
        if (d->type != T_INT || sc->s[d->start] == '-') return DECLINE;
        if (len + d->len + 3 > (Py_ssize_t)sizeof buf) return DECLINE;
        if (!first) {
            buf[len++] = ',';
            buf[len++] = ' ';
        }
        memcpy(buf + len, sc->s + d->start, d->len);
        len += d->len;
        first = 0;
    }
    buf[len++] = ']';
    *out = cache_get(&sc->shapes, buf, len);
    return *out ? OK : ERROR;
}

/* zlib's crc32 (the md5 fallback of a non-tensor value is the crc32 of its str()) */
static uint32_t CRC_TABLE[256];

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        CRC_TABLE[i] = c;
    }
}

static uint32_t crc32_of(const char *p, Py_ssize_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (Py_ssize_t i = 0; i < n; i++) c = CRC_TABLE[(c ^ (unsigned char)p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

static int is_special_kind(Scanner *sc, Node *type) {
    static const char *kinds[] = {"torch.Size", "slice", "ellipsis", "torch.ProcessGroup"};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (node_is_str(sc, type, kinds[i])) return 1;
    return 0;
}

static int name_is_rank_part(Scanner *sc) {
    static const char *parts[] = {"src", "dst", "group_src", "group_dst"};
    const char *p = sc->name.buf, *end = p + sc->name.len, *last = end;
    while (last > p && last[-1] != '.') last--;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if ((size_t)(end - last) == strlen(parts[i]) && memcmp(last, parts[i], end - last) == 0) return 1;
    return 0;
}

/* flatten.non_tensor for a plain scalar value (float, int, bool, null, string): dtype, shape, the
 * four statistics and the md5 into vals; DECLINE when the leaf needs the Python function */
static int scalar_leaf(Scanner *sc, Node *leaf, PyObject *md5_obj, PyObject **vals) {
    Node *type = child(sc, leaf, "type");
    Node *value = child(sc, leaf, "value");
    if (is_special_kind(sc, type) || name_is_rank_part(sc)) return DECLINE;
    int tn;
    PyObject *obj = NULL, *stat;
    switch (value ? value->type : T_NULL) {
    case T_FLT:
    case T_NAN:
    case T_INF:
    case T_NINF:
        tn = TN_FLOAT;
        break;
    case T_INT:
        tn = TN_INT;
        break;
    case T_TRUE:
    case T_FALSE:
        tn = TN_BOOL;
        break;
    case T_NULL:
        tn = TN_NONE;
        break;
    case T_STR:
        tn = TN_STR;
        break;
    default:
        return DECLINE;
    }
    if (value) {
        if (!(obj = to_python(sc, value))) return ERROR;
    } else {
        Py_INCREF(Py_None);
        obj = Py_None;
    }
    if (value && value->type == T_NAN) {
        stat = CONST(C_NAN);
    } else if (value && value->type == T_TRUE) {
        stat = CONST(C_TRUE);
    } else if (value && value->type == T_FALSE) {
        stat = CONST(C_FALSE);
    } else {
        Py_INCREF(obj);
        stat = obj;
    }
    PyObject *md5 = md5_obj;
    if (md5) {
        Py_INCREF(md5);
    } else if (!value) {
        md5 = CONST(C_EMPTY_CRC);
    } else {
        PyObject *text = PyObject_Str(obj);
        Py_ssize_t len;
        const char *utf8 = text ? PyUnicode_AsUTF8AndSize(text, &len) : NULL;
        if (utf8) {
            char hex[9];
            snprintf(hex, sizeof hex, "%08x", crc32_of(utf8, len));
            md5 = cache_get(&sc->crcs, hex, 8);
        }
        Py_XDECREF(text);
        if (!md5) {
            Py_DECREF(obj);
            Py_DECREF(stat);
            return ERROR;
        }
    }
    Py_DECREF(obj);
    Py_INCREF(sc->type_names[tn]);
    vals[COL_DTYPE] = sc->type_names[tn];
    Py_INCREF(sc->empty_shape);
    vals[COL_SHAPE] = sc->empty_shape;
    for (int i = 0; i < 4; i++) {
        Py_INCREF(stat);
        vals[COL_MAX + i] = stat;
    }
    Py_DECREF(stat);
    vals[COL_MD5] = md5;
    return OK;
}

static int add_leaf(Scanner *sc, Node *leaf, PyObject *state) {
    PyObject *vals[N_COL] = {0};
    int r = DECLINE;
    if (!keys_known(sc, leaf, &sc->known[K_LEAF], NULL)) return DECLINE; /* counted by the Python walk */
    Node *dn = child(sc, leaf, "data_name");
    Node *md5 = child(sc, leaf, "md5");
    PyObject *md5_obj = NULL;
    /* data_name and the row name */
    if (!dn || dn->type == T_NULL || (dn->type == T_STR && dn->len == 0)) {
        vals[COL_DN] = CONST(C_MINUS1);
        vals[COL_NAME] = current_name(sc);
    } else if (dn->type == T_STR) {
        vals[COL_DN] = node_str(sc, dn);
        const unsigned char *p = sc->s + dn->start;
        Py_ssize_t cut = dn->len;
        while (cut > 0 && p[cut - 1] != '.') cut--;
        if (cut > 0) {
            vals[COL_NAME] = PyUnicode_FromStringAndSize((const char *)p, cut - 1);
        } else {
            Py_XINCREF(vals[COL_DN]);
            vals[COL_NAME] = vals[COL_DN];
        }
    } else {
        goto fail;
    }
    if (md5 && md5->type != T_NULL) {
        /* a number or an empty text is read by the Python walk as msprobe's compare reads it: rare, left to it */
        if (md5->type != T_STR || md5->len == 0) goto fail;
        sc->md5_seen = 1;
        if (!(md5_obj = node_str(sc, md5))) goto error;
    }
    Node *dtype = child(sc, leaf, "dtype");
    if (dtype) {
        if (dtype->type == T_NULL) {
            Py_INCREF(Py_None);
            vals[COL_DTYPE] = Py_None;
        } else if (dtype->type == T_STR) {
            if (!(vals[COL_DTYPE] = cache_get(&sc->dtypes, (const char *)sc->s + dtype->start, dtype->len)))
                goto error;
        } else {
            goto fail;
        }
        Node *shape = child(sc, leaf, "shape");
        if (!shape || shape->type == T_NULL) {
            Py_INCREF(Py_None);
            vals[COL_SHAPE] = Py_None;
        } else if (shape->type == T_ARR) {
            if ((r = shape_text(sc, shape, &vals[COL_SHAPE])) != OK) goto done;
        } else {
            goto fail;
        }
        static const char *stats[4] = {"Max", "Min", "Mean", "Norm"};
        for (int i = 0; i < 4; i++) {
            if ((r = stat_value(sc, child(sc, leaf, stats[i]), &vals[COL_MAX + i])) != OK) goto done;
        }
        Node *rg = child(sc, leaf, "requires_grad");
        if (!rg || rg->type == T_NULL) {
            Py_INCREF(Py_None);
            vals[COL_RG] = Py_None;
        } else if (rg->type == T_TRUE) {
            vals[COL_RG] = CONST(C_TRUE);
        } else if (rg->type == T_FALSE) {
            vals[COL_RG] = CONST(C_FALSE);
        } else if (rg->type == T_STR) {
            vals[COL_RG] = node_str(sc, rg);
        } else {
            goto fail;
        }
        vals[COL_MD5] = md5_obj ? md5_obj : CONST(C_EMPTY_CRC);
        md5_obj = NULL;
    } else if ((r = scalar_leaf(sc, leaf, md5_obj, vals)) != DECLINE) {
        if (r != OK) goto done;
        Py_INCREF(Py_None);
        vals[COL_RG] = Py_None;
    } else {
        PyObject *leaf_obj = to_python(sc, leaf);
        PyObject *name = leaf_obj ? current_name(sc) : NULL;
        PyObject *res = name ? PyObject_CallFunctionObjArgs(sc->other_leaf, leaf_obj, name,
                                                            md5_obj ? md5_obj : Py_None, NULL)
                             : NULL;
        Py_XDECREF(leaf_obj);
        Py_XDECREF(name);
        if (!res) {
            /* whatever the Python walk would do with this leaf, it is its call; but a Ctrl-C (a
             * KeyboardInterrupt raised in the callback) or no memory goes on up */
            if (PyErr_ExceptionMatches(PyExc_MemoryError) || !PyErr_ExceptionMatches(PyExc_Exception)) goto error;
            PyErr_Clear();
            goto fail;
        }
        if (!PyTuple_Check(res) || PyTuple_GET_SIZE(res) != 7) {
            Py_DECREF(res);
            PyErr_SetString(PyExc_TypeError, "other_leaf must return a 7-tuple");
            goto error;
        }
        static const int order[7] = {COL_DTYPE, COL_SHAPE, COL_MAX, COL_MIN, COL_MEAN, COL_NORM, COL_MD5};
        for (int i = 0; i < 7; i++) {
            vals[order[i]] = PyTuple_GET_ITEM(res, i);
            Py_INCREF(vals[order[i]]);
        }
        Py_DECREF(res);
        Py_INCREF(Py_None);
        vals[COL_RG] = Py_None;
    }
    Py_INCREF(sc->api_idx);
    vals[COL_API] = sc->api_idx;
    Py_INCREF(state);
    vals[COL_STATE] = state;
    Py_XDECREF(md5_obj);
    return add_row(sc, vals);
error:
    r = ERROR;
    goto done;
fail:
    r = DECLINE;
done:
    Py_XDECREF(md5_obj);
    for (int i = 0; i < N_COL; i++) Py_XDECREF(vals[i]);
    return r;
}

/* ------------------------------------------------------------------ the index (index mode)
 *
 * Scanner(..., index=1 or 2) reads a document as above, accepting and declining exactly what the table mode
 * accepts and declines, but keeps no Python object per row: per entry its file offset, the hash of its key,
 * the hash state of its compare head (index=2: backward calls renumbered as match/naming.py does) and its
 * backward rank, its row count; per row the id of its name's suffix after the key (or of its whole name,
 * marked with a leading \x01, when the name does not start with the key), the id of its dtype (0: None) and
 * the statistics flags (bit k: statistic k is an int or a float, bit k + 4: a float). */

/* the statistic kind stat_value/stat_push give a node (DECLINE for a container) */
static int ix_stat_kind(Node *nd, int8_t *kind) {
    if (!nd) {
        *kind = KIND_NONE;
        return OK;
    }
    switch (nd->type) {
    case T_OBJ:
    case T_ARR:
        return DECLINE;
    case T_INT:
        *kind = KIND_INT;
        return OK;
    case T_FLT:
    case T_INF:
    case T_NINF:
        *kind = KIND_FLOAT;
        return OK;
    case T_NULL:
        *kind = KIND_NONE;
        return OK;
    default: /* a text, and NaN, true and false (kept as the texts "Nan", "True", "False") */
        *kind = KIND_STR;
        return OK;
    }
}

/* the kind stat_push gives a Python value; DECLINE for an int too large for a double */
static int ix_object_kind(PyObject *v, int8_t *kind) {
    if (PyFloat_CheckExact(v)) {
        *kind = KIND_FLOAT;
    } else if (PyLong_CheckExact(v)) {
        double d = PyLong_AsDouble(v);
        if (d == -1.0 && PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return ERROR;
            PyErr_Clear();
            return DECLINE;
        }
        *kind = KIND_INT;
    } else if (v == Py_None) {
        *kind = KIND_NONE;
    } else {
        *kind = PyUnicode_CheckExact(v) ? KIND_STR : KIND_OTHER;
    }
    return OK;
}

/* one row of the index: its name, its dtype (NULL: None), its statistics' kinds */
static int ix_row(Scanner *sc, const char *name, Py_ssize_t len, const char *dtype, Py_ssize_t dlen,
                  const int8_t *kinds) {
    int32_t sid;
    if (len >= sc->klen && memcmp(name, sc->name.buf, (size_t)sc->klen) == 0) {
        sid = intern_id(&sc->suffixes, name + sc->klen, len - sc->klen);
    } else {
        sc->scratch.len = 0;
        if (text_add(&sc->scratch, "\x01", 1) < 0 || text_add(&sc->scratch, name, len) < 0) return ERROR;
        sid = intern_id(&sc->suffixes, sc->scratch.buf, sc->scratch.len);
    }
    if (sid < 0) return ERROR;
    int32_t did = 0;
    if (dtype) {
        if ((did = intern_id(&sc->ix_dtypes, dtype, dlen)) < 0) return ERROR;
        if (++did > 0xFFFF) return DECLINE; /* more distinct dtypes than the index has ids for */
    }
    uint32_t suffix = (uint32_t)sid;
    uint16_t dt = (uint16_t)did;
    uint8_t flags = 0;
    for (int k = 0; k < 4; k++) {
        if (kinds[k] == KIND_FLOAT) flags |= (uint8_t)((1 << k) | (1 << (k + 4)));
        else if (kinds[k] == KIND_INT) flags |= (uint8_t)(1 << k);
    }
    if (buf_add(&sc->ix[IX_SUFFIX], &suffix, 4) < 0 || buf_add(&sc->ix[IX_DTYPE], &dt, 2) < 0 ||
        buf_add(&sc->ix[IX_FLAGS], &flags, 1) < 0)
        return ERROR;
    sc->rows++;
    return OK;
}

static int ix_null(Scanner *sc) {
    static const int8_t none[4] = {KIND_NONE, KIND_NONE, KIND_NONE, KIND_NONE};
    return ix_row(sc, sc->name.buf, sc->name.len, NULL, 0, none);
}

/* add_leaf in index mode: the same checks, the same DECLINEs, no Python object (but for other_leaf) */
static int ix_leaf(Scanner *sc, Node *leaf) {
    if (!keys_known(sc, leaf, &sc->known[K_LEAF], NULL)) return DECLINE;
    Node *dn = child(sc, leaf, "data_name");
    Node *md5 = child(sc, leaf, "md5");
    const char *name = sc->name.buf;
    Py_ssize_t name_len = sc->name.len;
    if (!dn || dn->type == T_NULL || (dn->type == T_STR && dn->len == 0)) {
        /* the walk's name */
    } else if (dn->type == T_STR) {
        const char *p = (const char *)sc->s + dn->start;
        Py_ssize_t cut = dn->len;
        while (cut > 0 && p[cut - 1] != '.') cut--;
        name = p;
        name_len = cut > 0 ? cut - 1 : dn->len;
    } else {
        return DECLINE;
    }
    if (md5 && md5->type != T_NULL) {
        if (md5->type != T_STR || md5->len == 0) return DECLINE;
        sc->md5_seen = 1;
    }
    int8_t kinds[4];
    Node *dtype = child(sc, leaf, "dtype");
    if (dtype) {
        if (dtype->type != T_NULL && dtype->type != T_STR) return DECLINE;
        Node *shape = child(sc, leaf, "shape");
        if (shape && shape->type == T_ARR) {
            Py_ssize_t len = 1; /* shape_text's limit, counted as it counts */
            int first = 1;
            for (int32_t c = shape->first; c >= 0; c = sc->nodes[c].next) {
                Node *d = &sc->nodes[c];
                if (d->type != T_INT || sc->s[d->start] == '-') return DECLINE;
                if (len + d->len + 3 > 512) return DECLINE;
                len += (first ? 0 : 2) + d->len;
                first = 0;
            }
        } else if (shape && shape->type != T_NULL) {
            return DECLINE;
        }
        static const char *stats[4] = {"Max", "Min", "Mean", "Norm"};
        for (int i = 0; i < 4; i++) {
            int r = ix_stat_kind(child(sc, leaf, stats[i]), &kinds[i]);
            if (r != OK) return r;
        }
        Node *rg = child(sc, leaf, "requires_grad");
        if (rg && rg->type != T_NULL && rg->type != T_TRUE && rg->type != T_FALSE && rg->type != T_STR)
            return DECLINE;
        if (dtype->type == T_NULL) return ix_row(sc, name, name_len, NULL, 0, kinds);
        return ix_row(sc, name, name_len, (const char *)sc->s + dtype->start, dtype->len, kinds);
    }
    /* scalar_leaf's plain values */
    Node *type = child(sc, leaf, "type");
    Node *value = child(sc, leaf, "value");
    if (!is_special_kind(sc, type) && !name_is_rank_part(sc)) {
        int tn = -1;
        int8_t kind = KIND_NONE;
        switch (value ? value->type : T_NULL) {
        case T_FLT:
        case T_INF:
        case T_NINF:
            tn = TN_FLOAT, kind = KIND_FLOAT;
            break;
        case T_NAN:
            tn = TN_FLOAT, kind = KIND_STR;
            break;
        case T_INT:
            tn = TN_INT, kind = KIND_INT;
            break;
        case T_TRUE:
        case T_FALSE:
            tn = TN_BOOL, kind = KIND_STR;
            break;
        case T_NULL:
            tn = TN_NONE, kind = KIND_NONE;
            break;
        case T_STR:
            tn = TN_STR, kind = KIND_STR;
            break;
        default:
            break;
        }
        if (tn >= 0) {
            int8_t same[4] = {kind, kind, kind, kind};
            return ix_row(sc, name, name_len, TYPE_NAMES[tn], (Py_ssize_t)strlen(TYPE_NAMES[tn]), same);
        }
    }
    /* anything else: the Python function, as in the table mode */
    PyObject *md5_obj = md5 && md5->type == T_STR ? node_str(sc, md5) : NULL;
    if (md5 && md5->type == T_STR && !md5_obj) return ERROR;
    PyObject *leaf_obj = to_python(sc, leaf);
    PyObject *name_obj = leaf_obj ? current_name(sc) : NULL;
    PyObject *res = name_obj ? PyObject_CallFunctionObjArgs(sc->other_leaf, leaf_obj, name_obj,
                                                            md5_obj ? md5_obj : Py_None, NULL)
                             : NULL;
    Py_XDECREF(leaf_obj);
    Py_XDECREF(name_obj);
    Py_XDECREF(md5_obj);
    if (!res) {
        if (PyErr_ExceptionMatches(PyExc_MemoryError) || !PyErr_ExceptionMatches(PyExc_Exception)) return ERROR;
        PyErr_Clear();
        return DECLINE;
    }
    if (!PyTuple_Check(res) || PyTuple_GET_SIZE(res) != 7) {
        Py_DECREF(res);
        PyErr_SetString(PyExc_TypeError, "other_leaf must return a 7-tuple");
        return ERROR;
    }
    int r = OK;
    for (int i = 0; i < 4 && r == OK; i++) r = ix_object_kind(PyTuple_GET_ITEM(res, 2 + i), &kinds[i]);
    PyObject *dt = PyTuple_GET_ITEM(res, 0);
    if (r == OK) {
        if (dt == Py_None) {
            r = ix_row(sc, name, name_len, NULL, 0, kinds);
        } else if (PyUnicode_Check(dt)) {
            Py_ssize_t dlen;
            const char *text = PyUnicode_AsUTF8AndSize(dt, &dlen);
            r = text ? ix_row(sc, name, name_len, text, dlen, kinds) : ERROR;
        } else {
            r = DECLINE; /* a dtype the index has no id for: the table mode reads the file */
        }
    }
    Py_DECREF(res);
    return r;
}

/* whether "parameters_grad" is one of the dot-separated parts of the current name */
static int name_has_pgrad(Scanner *sc) {
    const char *p = sc->name.buf, *end = p + sc->name.len;
    static const char word[] = "parameters_grad";
    const Py_ssize_t wlen = sizeof word - 1;
    while (p <= end) {
        const char *dot = memchr(p, '.', end - p);
        const char *stop = dot ? dot : end;
        if (stop - p == wlen && memcmp(p, word, wlen) == 0) return 1;
        if (!dot) break;
        p = dot + 1;
    }
    return 0;
}

static int walk(Scanner *sc, Node *nd, PyObject *state, int depth) {
    if (depth > MAX_DEPTH) return DECLINE;
    int r;
    Py_ssize_t base = sc->name.len;
    switch (nd->type) {
    case T_NULL:
        return sc->index_mode ? ix_null(sc) : add_null(sc, state);
    case T_ARR: {
        int keep_index = !name_has_pgrad(sc);
        int32_t i = 0;
        for (int32_t c = nd->first; c >= 0; c = sc->nodes[c].next, i++) {
            if (keep_index) {
                char num[16], *w = num + sizeof num; /* ".<i>", written backwards: no printf per argument */
                int32_t v = i;
                do { *--w = (char)('0' + v % 10); v /= 10; } while (v);
                *--w = '.';
                if (text_add(&sc->name, w, num + sizeof num - w) < 0) return ERROR;
            }
            r = walk(sc, &sc->nodes[c], state, depth + 1);
            sc->name.len = base;
            if (r != OK) return r;
        }
        return OK;
    }
    case T_OBJ: {
        if (node_is_str(sc, child(sc, nd, "class_type"), "torch.distributed.P2POp")) {
            if (!keys_known(sc, nd, &sc->known[K_P2P], NULL)) return DECLINE;
            Node *tensor = child(sc, nd, "tensor");
            Node *type = tensor && tensor->type == T_OBJ ? child(sc, tensor, "type") : NULL;
            if (type && type->type == T_STR) return sc->index_mode ? ix_leaf(sc, tensor) : add_leaf(sc, tensor, state);
            return sc->index_mode ? ix_null(sc) : add_null(sc, state);
        }
        Node *type = child(sc, nd, "type");
        if (type && type->type == T_STR) return sc->index_mode ? ix_leaf(sc, nd) : add_leaf(sc, nd, state);
        for (int32_t c = nd->first; c >= 0; c = sc->nodes[c].next) {
            Node *k = &sc->nodes[c];
            if (text_add(&sc->name, ".", 1) < 0 || text_add(&sc->name, (const char *)sc->s + k->kstart, k->klen) < 0)
                return ERROR;
            r = walk(sc, k, state, depth + 1);
            sc->name.len = base;
            if (r != OK) return r;
        }
        return OK;
    }
    default:
        return DECLINE; /* a bare value where an argument record belongs: the Python walk names it */
    }
}

static const struct {
    const char *key, *suffix;
    int state;
} ENTRY_KEYS[] = {
    {"input_args", ".input", C_INPUT},  {"input_kwargs", ".input", C_INPUT}, {"input", ".input", C_INPUT},
    {"parameters", ".parameters", C_PARAMETERS}, {"output", ".output", C_OUTPUT},
};

#define ERROR_HOW -2

static int add_word(Scanner *sc, int col, const char *text, Py_ssize_t len) {
    PyObject *word = cache_get(&sc->words, text, len);
    if (!word) return -1;
    int r = PyList_Append(sc->api_cols[col], word);
    Py_DECREF(word);
    return r;
}

/* the index's record of one entry (record_api in index mode); returns `how` */
static int ix_api(Scanner *sc, Py_ssize_t kstart, Py_ssize_t klen, const char *prefix, Py_ssize_t prefix_len,
                  const char *call, Py_ssize_t call_len, const char *direction, int how) {
    const char *k = (const char *)sc->s + kstart;
    int64_t offset = sc->base + (kstart - 1); /* the key's opening quote */
    uint64_t keyhash = mix64(fnv_more(FNV_OFFSET, k, klen)), head;
    int32_t rank = -1;
    if (sc->renumber && strcmp(direction, "backward") == 0) {
        /* naming.renumber_backward: the k-th backward call of a prefix gets every number of its call spelled k */
        int32_t pid = intern_id(&sc->prefixes, prefix, prefix_len);
        if (pid < 0) return ERROR_HOW;
        while (sc->prefix_counts.len < ((Py_ssize_t)pid + 1) * 4) {
            int32_t zero = 0;
            if (buf_add(&sc->prefix_counts, &zero, 4) < 0) return ERROR_HOW;
        }
        rank = ((int32_t *)sc->prefix_counts.p)[pid]++;
        char num[16];
        int num_len = snprintf(num, sizeof num, "%d", (int)rank);
        Text *t = &sc->scratch;
        t->len = 0;
        if (prefix_len && (text_add(t, prefix, prefix_len) < 0 || text_add(t, ".", 1) < 0)) return ERROR_HOW;
        Py_ssize_t p = 0;
        for (;;) {
            Py_ssize_t q = p;
            while (q < call_len && call[q] != '.') q++;
            int digits = q > p;
            for (Py_ssize_t i = p; i < q && digits; i++) digits = call[i] >= '0' && call[i] <= '9';
            if (digits ? text_add(t, num, num_len) < 0 : text_add(t, call + p, q - p) < 0) return ERROR_HOW;
            if (q >= call_len) break;
            if (text_add(t, ".", 1) < 0) return ERROR_HOW;
            p = q + 1;
        }
        head = fnv_more(FNV_OFFSET, t->buf, t->len);
    } else {
        head = fnv_more(FNV_OFFSET, k, klen);
    }
    if (buf_add(&sc->ix[IX_OFFSET], &offset, 8) < 0 || buf_add(&sc->ix[IX_KEYHASH], &keyhash, 8) < 0 ||
        buf_add(&sc->ix[IX_HEAD], &head, 8) < 0 || buf_add(&sc->ix[IX_RANK], &rank, 4) < 0)
        return ERROR_HOW;
    return how;
}

/* document.split_api_key, recorded as one more API; returns how to walk the entry: -1 skip it (no API),
 * 0 whole as "debug", 1 whole as "parameters_grad", 2 its argument keys; ERROR_HOW on failure */
static int record_api(Scanner *sc, PyObject *key, Py_ssize_t kstart, Py_ssize_t klen) {
    const char *k = (const char *)sc->s + kstart;
    const char *prefix, *call, *direction;
    Py_ssize_t prefix_len, call_len;
    int how;
    /* the last two dot-separated parts: [d2 + 1, d1) and [d1 + 1, klen); d1 = -1 for a single part */
    Py_ssize_t d1 = klen - 1, d2;
    while (d1 >= 0 && k[d1] != '.') d1--;
    d2 = d1 - 1;
    while (d2 >= 0 && k[d2] != '.') d2--;
    const char *last = k + d1 + 1;
    Py_ssize_t last_len = klen - d1 - 1;
    const char *second = k + d2 + 1;
    Py_ssize_t second_len = d1 >= 0 ? d1 - d2 - 1 : -1;
#define IS(p, n, word) ((n) == (Py_ssize_t)strlen(word) && memcmp((p), (word), (n)) == 0)
#define IN_LAST2(word) (IS(last, last_len, word) || (second_len >= 0 && IS(second, second_len, word)))
    if (sc->debug) {
        prefix = k, prefix_len = klen, call = "", call_len = 0, direction = "debug";
    } else if (IN_LAST2("parameters_grad")) {
        prefix = k, prefix_len = d1 >= 0 ? d1 : 0, call = direction = "parameters_grad";
        call_len = 15;
    } else if (d1 >= 0 && (IN_LAST2("forward") || IN_LAST2("backward"))) {
        direction = IN_LAST2("forward") ? "forward" : "backward";
        prefix = k, prefix_len = d2 >= 0 ? d2 : 0;
        call = k + d2 + 1, call_len = klen - d2 - 1;
    } else {
        return -1;
    }
    if (sc->debug || IS(last, last_len, "debug"))
        how = 0;
    else
        how = strcmp(direction, "parameters_grad") == 0 ? 1 : 2;
#undef IN_LAST2
#undef IS
    if (sc->index_mode) return ix_api(sc, kstart, klen, prefix, prefix_len, call, call_len, direction, how);
    PyObject *first = PyLong_FromSsize_t(sc->rows);
    int bad = !first || PyList_Append(sc->api_cols[API_KEY], key) < 0 ||
              add_word(sc, API_PREFIX, prefix, prefix_len) < 0 || add_word(sc, API_CALL, call, call_len) < 0 ||
              add_word(sc, API_DIRECTION, direction, (Py_ssize_t)strlen(direction)) < 0 ||
              PyList_Append(sc->api_cols[API_FIRST_ROW], first) < 0;
    Py_XDECREF(first);
    return bad ? ERROR_HOW : how;
}

/* the rows of one recorded entry, walked as record_api said (`how`) */
static int walk_entry(Scanner *sc, Py_ssize_t kstart, Py_ssize_t klen, int32_t root, int how) {
    Node *nd = &sc->nodes[root];
    sc->name.len = 0;
    if (text_add(&sc->name, (const char *)sc->s + kstart, klen) < 0) return ERROR;
    if (how == 0) return walk(sc, nd, sc->consts[C_DEBUG], 0);
    if (how == 1) return walk(sc, nd, sc->consts[C_PGRAD], 0);
    if (nd->type != T_OBJ) return DECLINE;
    if (!keys_known(sc, nd, &sc->known[K_ENTRY], NULL)) return DECLINE;
    for (size_t i = 0; i < sizeof ENTRY_KEYS / sizeof ENTRY_KEYS[0]; i++) {
        Node *value = child(sc, nd, ENTRY_KEYS[i].key);
        if (!value) continue;
        sc->name.len = klen;
        if (text_add(&sc->name, ENTRY_KEYS[i].suffix, (Py_ssize_t)strlen(ENTRY_KEYS[i].suffix)) < 0) return ERROR;
        int r = walk(sc, value, sc->consts[ENTRY_KEYS[i].state], 1);
        if (r != OK) return r;
    }
    return OK;
}

/* one data member, parsed: its key at [kstart, kstart + klen), its value the node `root` */
static int add_entry(Scanner *sc, Py_ssize_t kstart, Py_ssize_t klen, int32_t root) {
    int how;
    if (sc->index_mode) { /* no key object and no set of keys: repeated keys are found from the key hashes */
        how = record_api(sc, NULL, kstart, klen);
    } else {
        PyObject *key = PyUnicode_FromStringAndSize((const char *)sc->s + kstart, klen);
        if (!key) return ERROR;
        int known = PySet_Contains(sc->seen, key);
        if (known != 0 || PySet_Add(sc->seen, key) < 0) {
            Py_DECREF(key);
            return known > 0 ? DECLINE : ERROR; /* a repeated key: the Python path reports it */
        }
        how = record_api(sc, key, kstart, klen);
        Py_DECREF(key);
    }
    if (how == ERROR_HOW) return ERROR;
    if (how < 0) return DECLINE; /* a key msprobe does not compare: the Python walk counts it */
    if (sc->index_mode) {
        sc->n_apis++;
    } else {
        Py_XDECREF(sc->api_idx);
        if (!(sc->api_idx = PyLong_FromSsize_t(sc->n_apis++))) return ERROR;
    }
    Py_ssize_t first = sc->rows;
    sc->klen = klen;
    int r = walk_entry(sc, kstart, klen, root, how);
    if (r == OK && sc->index_mode) {
        int32_t n = (int32_t)(sc->rows - first);
        if (buf_add(&sc->ix[IX_NROWS], &n, 4) < 0) return ERROR;
    }
    return r;
}

/* ------------------------------------------------------------------ the top level */

/* just inside an object: '}' closes it (empty), anything else starts its first member */
static int first_member(Scanner *sc, unsigned char c, int member, int closed) {
    if (c == '}') {
        sc->pos++;
        sc->state = closed;
    } else {
        sc->state = member;
    }
    return OK;
}

/* after a member of an object: ',' leads to the next member, '}' closes the object */
static int after_member(Scanner *sc, unsigned char c, int next_member, int closed) {
    sc->pos++;
    if (c == ',') {
        sc->state = next_member;
        return OK;
    }
    if (c == '}') {
        sc->state = closed;
        return OK;
    }
    return DECLINE;
}

/* one step of the top-level state machine from sc->pos; OK when it moved on */
static int step(Scanner *sc) {
    int r;
    if ((r = skip_ws(sc)) != OK) return r;
    unsigned char c = sc->s[sc->pos];
    switch (sc->state) {
    case S_START:
        if (c != '{') return DECLINE;
        sc->pos++;
        sc->state = S_TOP_FIRST;
        return OK;
    case S_TOP_FIRST:
        return first_member(sc, c, S_TOP_KEY, S_END);
    case S_TOP_KEY: {
        Py_ssize_t kstart, klen;
        if (c != '"') return DECLINE;
        if ((r = scan_string(sc, &kstart, &klen)) != OK) return r;
        if ((r = skip_ws(sc)) != OK) return r;
        if (sc->s[sc->pos++] != ':') return DECLINE;
        if ((r = skip_ws(sc)) != OK) return r;
        PyObject *key = PyUnicode_FromStringAndSize((const char *)sc->s + kstart, klen);
        if (!key) return ERROR;
        Py_ssize_t n = PyList_GET_SIZE(sc->header);
        for (Py_ssize_t i = 0; i < n; i++) { /* a repeated top-level key: left to the Python path */
            int same = PyUnicode_Compare(PyTuple_GET_ITEM(PyList_GET_ITEM(sc->header, i), 0), key) == 0;
            if (same) {
                Py_DECREF(key);
                return DECLINE;
            }
        }
        PyObject *value;
        if (klen == 4 && memcmp(sc->s + kstart, "data", 4) == 0) {
            if (sc->s[sc->pos] != '{') {
                Py_DECREF(key);
                return DECLINE;
            }
            sc->pos++;
            value = Py_None;
            Py_INCREF(value);
            sc->state = S_DATA_FIRST;
        } else {
            Py_ssize_t start = sc->pos;
            if ((r = skip_value(sc, 0)) != OK) {
                Py_DECREF(key);
                return r;
            }
            value = PyBytes_FromStringAndSize((const char *)sc->s + start, sc->pos - start);
            sc->state = S_TOP_AFTER;
        }
        PyObject *item = value ? PyTuple_Pack(2, key, value) : NULL;
        Py_DECREF(key);
        Py_XDECREF(value);
        if (!item || PyList_Append(sc->header, item) < 0) {
            Py_XDECREF(item);
            return ERROR;
        }
        Py_DECREF(item);
        return OK;
    }
    case S_TOP_AFTER:
        return after_member(sc, c, S_TOP_KEY, S_END);
    case S_DATA_FIRST:
        if (c == '}') sc->data_end = sc->base + sc->pos;
        return first_member(sc, c, S_DATA_MEMBER, S_TOP_AFTER);
    case S_DATA_MEMBER: {
        Py_ssize_t kstart, klen;
        int32_t root;
        if (c != '"') return DECLINE;
        if ((r = scan_string(sc, &kstart, &klen)) != OK) return r;
        if ((r = skip_ws(sc)) != OK) return r;
        if (sc->s[sc->pos++] != ':') return DECLINE;
        if ((r = skip_ws(sc)) != OK) return r;
        sc->used = 0;
        if ((r = parse_value(sc, 0, &root)) != OK) return r;
        /* the value must be complete (not cut by the block's end) before any row is added */
        if ((r = skip_ws(sc)) != OK) return r;
        if ((r = add_entry(sc, kstart, klen, root)) != OK) return r;
        sc->state = S_DATA_AFTER;
        return OK;
    }
    case S_DATA_AFTER:
        if (c == '}') sc->data_end = sc->base + sc->pos;
        return after_member(sc, c, S_DATA_MEMBER, S_TOP_AFTER);
    default: /* S_END: only blanks may follow */
        return DECLINE;
    }
}

static PyObject *Scanner_feed(Scanner *sc, PyObject *args) {
    Py_buffer view;
    int final;
    long long base = 0;
    if (!PyArg_ParseTuple(args, "y*p|L", &view, &final, &base)) return NULL;
    sc->base = base;
    sc->s = view.buf;
    sc->n = view.len;
    sc->pos = 0;
    Py_ssize_t done = 0;
    int r = OK;
    for (;;) {
        int state = sc->state;
        r = step(sc);
        if (r != OK) {
            sc->state = state; /* a cut step is taken again with the next block */
            break;
        }
        done = sc->pos;
    }
    PyBuffer_Release(&view);
    sc->s = NULL;
    if (r == ERROR) return NULL;
    /* the end of the buffer: more to come, or the end of a complete document */
    if (r == END_OF_BUFFER && (!final || sc->state == S_END)) return PyLong_FromSsize_t(done);
    return PyLong_FromLong(-1);
}

static PyObject *Scanner_get_header(Scanner *sc, void *closure) {
    Py_INCREF(sc->header);
    return sc->header;
}

static PyObject *Scanner_get_apis(Scanner *sc, void *closure) {
    return PyTuple_Pack(N_API, sc->api_cols[0], sc->api_cols[1], sc->api_cols[2], sc->api_cols[3], sc->api_cols[4]);
}

static PyObject *Scanner_get_stats(Scanner *sc, void *closure) {
    PyObject *out = PyTuple_New(4);
    if (!out) return NULL;
    for (int k = 0; k < 4; k++) {
        StatBuf *b = &sc->stats[k];
        PyObject *kinds = PyByteArray_FromStringAndSize((const char *)b->kind, b->len);
        PyObject *nums = PyByteArray_FromStringAndSize((const char *)b->num, b->len * (Py_ssize_t)sizeof(double));
        PyObject *item = kinds && nums ? PyTuple_Pack(3, kinds, nums, b->others) : NULL;
        Py_XDECREF(kinds);
        Py_XDECREF(nums);
        if (!item) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, k, item);
    }
    return out;
}

static PyObject *Scanner_get_md5_seen(Scanner *sc, void *closure) { return PyBool_FromLong(sc->md5_seen); }

static PyObject *intern_texts(Intern *t, const char *skip_marker) {
    PyObject *out = PyList_New(t->n);
    if (!out) return NULL;
    for (int32_t i = 0; i < t->n; i++) {
        Py_ssize_t len;
        const char *text = intern_text(t, i, &len);
        PyObject *item = PyBytes_FromStringAndSize(text, len);
        if (!item) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, item);
    }
    return out;
}

/* take_index() -> (columns, suffixes, dtypes, data_end): the index's columns as bytearrays (IX_* order; the
 * scanner's own copies are freed), the texts of the suffix and dtype ids as bytes (dtype id k is texts[k - 1]) */
static PyObject *Scanner_take_index(Scanner *sc, PyObject *unused) {
    if (!sc->index_mode) {
        PyErr_SetString(PyExc_ValueError, "not an index scanner");
        return NULL;
    }
    PyObject *cols = PyTuple_New(N_IX);
    if (!cols) return NULL;
    for (int i = 0; i < N_IX; i++) {
        PyObject *b = PyByteArray_FromStringAndSize(sc->ix[i].p ? sc->ix[i].p : "", sc->ix[i].len);
        if (!b) {
            Py_DECREF(cols);
            return NULL;
        }
        PyTuple_SET_ITEM(cols, i, b);
        buf_free(&sc->ix[i]);
    }
    PyObject *suffixes = intern_texts(&sc->suffixes, NULL);
    PyObject *dtypes = suffixes ? intern_texts(&sc->ix_dtypes, NULL) : NULL;
    if (!dtypes) {
        Py_DECREF(cols);
        Py_XDECREF(suffixes);
        return NULL;
    }
    return Py_BuildValue("(NNNL)", cols, suffixes, dtypes, sc->data_end);
}

static PyObject *Scanner_get_done(Scanner *sc, void *closure) { return PyBool_FromLong(sc->state == S_END); }

static void words_free(Words *w) {
    PyMem_Free(w->text);
    PyMem_Free(w->len);
    w->text = NULL;
    w->len = NULL;
    w->n = 0;
}

/* the word set of a tuple of str (the texts stay owned by the tuple) */
static int words_from(Words *w, PyObject *names) {
    words_free(w);
    if (!PyTuple_Check(names)) {
        PyErr_SetString(PyExc_TypeError, "known must hold tuples of str");
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    w->text = PyMem_Calloc(n ? n : 1, sizeof(char *));
    w->len = PyMem_Calloc(n ? n : 1, sizeof(Py_ssize_t));
    if (!w->text || !w->len) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        if (!PyUnicode_Check(name)) {
            PyErr_SetString(PyExc_TypeError, "known must hold tuples of str");
            return -1;
        }
        if (!(w->text[i] = PyUnicode_AsUTF8AndSize(name, &w->len[i]))) return -1;
    }
    w->n = n;
    return 0;
}

static int Scanner_init(Scanner *sc, PyObject *args, PyObject *kwds) {
    PyObject *cols, *consts, *other_leaf, *known;
    int debug, index = 0;
    if (!PyArg_ParseTuple(args, "O!pOO!O!|i", &PyTuple_Type, &cols, &debug, &other_leaf, &PyTuple_Type, &consts,
                          &PyTuple_Type, &known, &index))
        return -1;
    sc->index_mode = index > 0;
    sc->renumber = index > 1;
    if (PyTuple_GET_SIZE(known) != N_KNOWN) {
        PyErr_SetString(PyExc_ValueError, "Scanner needs 3 tuples of known names");
        return -1;
    }
    Py_INCREF(known);
    Py_XSETREF(sc->known_obj, known);
    for (int i = 0; i < N_KNOWN; i++)
        if (words_from(&sc->known[i], PyTuple_GET_ITEM(known, i)) < 0) return -1;
    if (PyTuple_GET_SIZE(cols) != N_COL || PyTuple_GET_SIZE(consts) != N_CONST) {
        PyErr_SetString(PyExc_ValueError, "Scanner needs 12 columns and 10 constants");
        return -1;
    }
    for (int i = 0; i < N_COL; i++) {
        PyObject *col = PyTuple_GET_ITEM(cols, i);
        if (!PyList_Check(col)) {
            PyErr_SetString(PyExc_TypeError, "columns must be lists");
            return -1;
        }
        Py_INCREF(col);
        Py_XSETREF(sc->cols[i], col);
    }
    for (int i = 0; i < N_CONST; i++) {
        PyObject *c = PyTuple_GET_ITEM(consts, i);
        Py_INCREF(c);
        Py_XSETREF(sc->consts[i], c);
    }
    for (int i = 0; i < N_API; i++) {
        Py_XSETREF(sc->api_cols[i], PyList_New(0));
        if (!sc->api_cols[i]) return -1;
    }
    for (int i = 0; i < N_TYPE_NAMES; i++) {
        Py_XSETREF(sc->type_names[i], PyUnicode_FromString(TYPE_NAMES[i]));
        if (!sc->type_names[i]) return -1;
    }
    Py_XSETREF(sc->empty_shape, PyUnicode_FromString("[]"));
    if (!sc->empty_shape) return -1;
    for (int k = 0; k < 4; k++) {
        sc->stats[k].len = 0;
        Py_XSETREF(sc->stats[k].others, PyDict_New());
        if (!sc->stats[k].others) return -1;
    }
    Py_INCREF(other_leaf);
    Py_XSETREF(sc->other_leaf, other_leaf);
    Py_XSETREF(sc->seen, PySet_New(NULL));
    Py_XSETREF(sc->header, PyList_New(0));
    if (!sc->seen || !sc->header) return -1;
    sc->debug = debug;
    sc->state = S_START;
    sc->rows = PyList_GET_SIZE(sc->cols[COL_NAME]);
    return 0;
}

static void Scanner_dealloc(Scanner *sc) {
    for (int i = 0; i < N_COL; i++) Py_XDECREF(sc->cols[i]);
    for (int i = 0; i < N_CONST; i++) Py_XDECREF(sc->consts[i]);
    for (int i = 0; i < N_API; i++) Py_XDECREF(sc->api_cols[i]);
    for (int i = 0; i < N_TYPE_NAMES; i++) Py_XDECREF(sc->type_names[i]);
    Py_XDECREF(sc->empty_shape);
    cache_free(&sc->words);
    cache_free(&sc->crcs);
    for (int k = 0; k < 4; k++) {
        PyMem_Free(sc->stats[k].kind);
        PyMem_Free(sc->stats[k].num);
        Py_XDECREF(sc->stats[k].others);
    }
    Py_XDECREF(sc->other_leaf);
    for (int i = 0; i < N_KNOWN; i++) words_free(&sc->known[i]);
    Py_XDECREF(sc->known_obj);
    Py_XDECREF(sc->seen);
    Py_XDECREF(sc->header);
    Py_XDECREF(sc->api_idx);
    for (int i = 0; i < N_IX; i++) buf_free(&sc->ix[i]);
    intern_free(&sc->suffixes);
    intern_free(&sc->ix_dtypes);
    intern_free(&sc->prefixes);
    buf_free(&sc->prefix_counts);
    PyMem_Free(sc->scratch.buf);
    PyMem_Free(sc->nodes);
    PyMem_Free(sc->name.buf);
    cache_free(&sc->dtypes);
    cache_free(&sc->shapes);
    Py_TYPE(sc)->tp_free((PyObject *)sc);
}

/* classify_statistics(values) -> (kinds, numbers) or None: see stats_metrics.StatColumn */
static PyObject *classify_statistics(PyObject *module, PyObject *values) {
    PyObject *seq = PySequence_Fast(values, "values must be a sequence");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    PyObject *kinds = PyByteArray_FromStringAndSize(NULL, n);
    PyObject *nums = PyByteArray_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(double));
    if (!kinds || !nums) goto error;
    char *kind = PyByteArray_AS_STRING(kinds);
    double *num = (double *)PyByteArray_AS_STRING(nums);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = items[i];
        if (PyFloat_CheckExact(v)) {
            kind[i] = KIND_FLOAT;
            num[i] = PyFloat_AS_DOUBLE(v);
        } else if (PyLong_CheckExact(v)) {
            double d = PyLong_AsDouble(v);
            if (d == -1.0 && PyErr_Occurred()) { /* too large for a double: the numpy path decides */
                PyErr_Clear();
                Py_DECREF(kinds);
                Py_DECREF(nums);
                Py_DECREF(seq);
                Py_RETURN_NONE;
            }
            kind[i] = KIND_INT;
            num[i] = d;
        } else {
            kind[i] = PyUnicode_CheckExact(v) ? KIND_STR : v == Py_None ? KIND_NONE : KIND_OTHER;
            num[i] = Py_NAN;
        }
    }
    Py_DECREF(seq);
    return Py_BuildValue("(NN)", kinds, nums);
error:
    Py_XDECREF(kinds);
    Py_XDECREF(nums);
    Py_DECREF(seq);
    return NULL;
}

/* hash_texts(texts) -> bytearray of uint64: the index's key hash of each str (of its UTF-8) */
static PyObject *hash_texts(PyObject *module, PyObject *values) {
    PyObject *seq = PySequence_Fast(values, "texts must be a sequence");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    PyObject *out = PyByteArray_FromStringAndSize(NULL, n * 8);
    if (!out) {
        Py_DECREF(seq);
        return NULL;
    }
    uint64_t *h = (uint64_t *)PyByteArray_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t len;
        const char *text = PyUnicode_Check(items[i]) ? PyUnicode_AsUTF8AndSize(items[i], &len) : NULL;
        if (!text) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "texts must be str");
            Py_DECREF(seq);
            Py_DECREF(out);
            return NULL;
        }
        h[i] = mix64(fnv_more(FNV_OFFSET, text, len));
    }
    Py_DECREF(seq);
    return out;
}

/* row_hashes(heads, nrows, suffix_ids, suffixes) -> bytearray of uint64: the hash of each row's compare key,
 * head + suffix (a suffix starting with \x01 is the row's whole key); heads: uint64 hash states per entry,
 * nrows: int32 rows per entry, suffix_ids: uint32 per row, suffixes: list of bytes */
static PyObject *row_hashes(PyObject *module, PyObject *args) {
    Py_buffer heads, nrows, sids;
    PyObject *suffixes;
    if (!PyArg_ParseTuple(args, "y*y*y*O!", &heads, &nrows, &sids, &PyList_Type, &suffixes)) return NULL;
    PyObject *out = NULL;
    Py_ssize_t n_api = heads.len / 8, n_rows = sids.len / 4, n_suffix = PyList_GET_SIZE(suffixes);
    if (nrows.len / 4 != n_api) {
        PyErr_SetString(PyExc_ValueError, "heads and nrows differ in length");
        goto done;
    }
    out = PyByteArray_FromStringAndSize(NULL, n_rows * 8);
    if (!out) goto done;
    uint64_t *h = (uint64_t *)PyByteArray_AS_STRING(out);
    const uint64_t *head = heads.buf;
    const int32_t *counts = nrows.buf;
    const uint32_t *sid = sids.buf;
    Py_ssize_t row = 0;
    for (Py_ssize_t a = 0; a < n_api; a++) {
        if (counts[a] < 0 || row + counts[a] > n_rows) {
            PyErr_SetString(PyExc_ValueError, "row counts do not add up to the rows");
            goto fail;
        }
        for (int32_t r = 0; r < counts[a]; r++, row++) {
            if (sid[row] >= (uint32_t)n_suffix) {
                PyErr_SetString(PyExc_ValueError, "a suffix id has no text");
                goto fail;
            }
            PyObject *text = PyList_GET_ITEM(suffixes, sid[row]);
            if (!PyBytes_Check(text)) {
                PyErr_SetString(PyExc_TypeError, "suffixes must be bytes");
                goto fail;
            }
            const char *p = PyBytes_AS_STRING(text);
            Py_ssize_t len = PyBytes_GET_SIZE(text);
            h[row] = len && p[0] == 1 ? mix64(fnv_more(FNV_OFFSET, p + 1, len - 1)) : mix64(fnv_more(head[a], p, len));
        }
    }
    if (row != n_rows) {
        PyErr_SetString(PyExc_ValueError, "row counts do not add up to the rows");
        goto fail;
    }
    goto done;
fail:
    Py_CLEAR(out);
done:
    PyBuffer_Release(&heads);
    PyBuffer_Release(&nrows);
    PyBuffer_Release(&sids);
    return out;
}

/* A column of numbers for join_rows, as msprobe_core.text.csv_rows.number_column gives it: (body, overrides,
   suffix, quote_negative, spell). body: orjson's texts of the column's float64 values, comma-separated (the same
   shortest digits as repr); overrides: None, or per row a text written instead of the number (None: the number);
   suffix: bytes after each number; quote_negative: a negative number is written after an apostrophe. */
typedef struct {
    const char *p, *end;  /* the body not read yet */
    PyObject **over;      /* overrides[r], or NULL */
    const char *suffix;
    Py_ssize_t nsuffix;
    int quote_negative;
} NumberColumn;

static int number_column(PyObject *form, NumberColumn *nc, Py_ssize_t *nrows) {
    if (!PyTuple_Check(form) || PyTuple_GET_SIZE(form) != 5) return 0;
    PyObject *body = PyTuple_GET_ITEM(form, 0), *over = PyTuple_GET_ITEM(form, 1), *suffix = PyTuple_GET_ITEM(form, 2);
    if (!PyBytes_Check(body) || !PyBytes_Check(suffix) || (over != Py_None && !PyList_Check(over))) return 0;
    nc->p = PyBytes_AS_STRING(body);
    nc->end = nc->p + PyBytes_GET_SIZE(body);
    nc->suffix = PyBytes_AS_STRING(suffix);
    nc->nsuffix = PyBytes_GET_SIZE(suffix);
    nc->quote_negative = PyObject_IsTrue(PyTuple_GET_ITEM(form, 3)) == 1;
    nc->over = NULL;
    if (over != Py_None) {
        nc->over = ((PyListObject *)over)->ob_item;
        if (PyList_GET_SIZE(over) < *nrows) *nrows = PyList_GET_SIZE(over);
    }
    Py_ssize_t n = nc->p < nc->end ? 1 : 0;  /* one number per comma-separated text */
    for (const char *q = nc->p; (q = memchr(q, ',', (size_t)(nc->end - q))) != NULL; q++) n++;
    if (n < *nrows) *nrows = n;
    return 1;
}

/* Write the next number of nc (or its row's override) at w: repr's spelling of orjson's text (orjson writes
   1.5e-7 where repr writes 1.5e-07, and 0.000015 where repr writes 1.5e-05), then the suffix. Returns the end, or
   NULL for an override that is not an ASCII str. */
static Py_UCS1 *write_number(NumberColumn *nc, Py_ssize_t r, Py_UCS1 *w) {
    const char *t = nc->p, *stop = memchr(t, ',', (size_t)(nc->end - t));
    if (stop == NULL) stop = nc->end;
    nc->p = stop < nc->end ? stop + 1 : stop;
    if (nc->over && nc->over[r] != Py_None) {
        PyObject *v = nc->over[r];
        if (!PyUnicode_CheckExact(v) || !PyUnicode_IS_ASCII(v)) return NULL;
        memcpy(w, PyUnicode_1BYTE_DATA(v), (size_t)PyUnicode_GET_LENGTH(v));
        return w + PyUnicode_GET_LENGTH(v);
    }
    int neg = t < stop && *t == '-';
    if (neg && nc->quote_negative) *w++ = '\'';
    const char *digits = t + neg, *e = memchr(t, 'e', (size_t)(stop - t));
    if (e != NULL) {
        if (e + 2 < stop && e[1] == '-' && stop - (e + 2) == 1) {  /* e-7: repr pads the exponent to two digits */
            memcpy(w, t, (size_t)(e + 2 - t));
            w += e + 2 - t;
            *w++ = '0';
            *w++ = (Py_UCS1)e[2];
        } else {
            memcpy(w, t, (size_t)(stop - t));
            w += stop - t;
        }
    } else if (stop - digits > 6 && memcmp(digits, "0.0000", 6) == 0 && digits[6] >= '1' && digits[6] <= '9') {
        if (neg) *w++ = '-';  /* 1e-5 <= |x| < 1e-4: repr writes D.DDDe-05 */
        *w++ = (Py_UCS1)digits[6];
        if (stop - digits > 7) {
            *w++ = '.';
            memcpy(w, digits + 7, (size_t)(stop - digits - 7));
            w += stop - digits - 7;
        }
        memcpy(w, "e-05", 4);
        w += 4;
    } else {
        memcpy(w, t, (size_t)(stop - t));
        w += stop - t;
    }
    memcpy(w, nc->suffix, (size_t)nc->nsuffix);
    return w + nc->nsuffix;
}

/* join_rows(columns) -> str: the CSV lines of the rows whose fields are ``columns`` (lists of str, the fields
   already quoted, or columns of numbers: see NumberColumn), each field joined by ',' and each row ended by '\n',
   over the shortest column's rows, as "\n".join(map(",".join, zip(*columns))) + "\n" gives them; None when a field
   is not an ASCII str or a column is neither (the caller joins those in Python). One pass to size the text, one
   to write it: no tuple and no row string per row, and no string per number. */
static PyObject *join_rows(PyObject *module, PyObject *arg) {
    PyObject *cols = PySequence_Fast(arg, "join_rows: a sequence of lists");
    if (cols == NULL) return NULL;
    Py_ssize_t ncols = PySequence_Fast_GET_SIZE(cols), nrows = PY_SSIZE_T_MAX, total = 0;
    PyObject **colv = PySequence_Fast_ITEMS(cols);
    if (ncols == 0) { Py_DECREF(cols); return PyUnicode_New(0, 127); }
    NumberColumn *numbers = PyMem_Calloc((size_t)ncols, sizeof(NumberColumn));
    PyObject *out = NULL;
    char *buf = NULL;
    if (numbers == NULL) { Py_DECREF(cols); return PyErr_NoMemory(); }
    for (Py_ssize_t c = 0; c < ncols; c++) {
        if (PyList_Check(colv[c])) {
            if (PyList_GET_SIZE(colv[c]) < nrows) nrows = PyList_GET_SIZE(colv[c]);
        } else if (!number_column(colv[c], &numbers[c], &nrows)) {
            goto none;
        }
    }
    for (Py_ssize_t c = 0; c < ncols; c++) {
        if (!PyList_Check(colv[c])) {  /* at most each text's own bytes, a pad or an apostrophe, the suffix */
            total += (numbers[c].end - numbers[c].p) + nrows * (2 + numbers[c].nsuffix);
            for (Py_ssize_t r = 0; numbers[c].over && r < nrows; r++)
                if (PyUnicode_Check(numbers[c].over[r])) total += PyUnicode_GET_LENGTH(numbers[c].over[r]);
            continue;
        }
        PyObject **items = ((PyListObject *)colv[c])->ob_item;
        for (Py_ssize_t r = 0; r < nrows; r++) {
            PyObject *v = items[r];
            if (!PyUnicode_CheckExact(v) || !PyUnicode_IS_ASCII(v)) goto none;
            total += PyUnicode_GET_LENGTH(v);
        }
    }
    total += nrows * ncols;  /* a ',' after each field but the last of a row, a '\n' after the last */
    buf = PyMem_Malloc((size_t)total + 1);
    if (buf == NULL) { PyErr_NoMemory(); goto done; }
    Py_UCS1 *w = (Py_UCS1 *)buf;
    for (Py_ssize_t r = 0; r < nrows; r++) {
        for (Py_ssize_t c = 0; c < ncols; c++) {
            if (PyList_Check(colv[c])) {
                PyObject *v = ((PyListObject *)colv[c])->ob_item[r];
                Py_ssize_t n = PyUnicode_GET_LENGTH(v);
                memcpy(w, PyUnicode_1BYTE_DATA(v), (size_t)n);
                w += n;
            } else if ((w = write_number(&numbers[c], r, w)) == NULL) {
                goto none;
            }
            *w++ = c + 1 < ncols ? ',' : '\n';
        }
    }
    out = PyUnicode_New(w - (Py_UCS1 *)buf, 127);
    if (out != NULL) memcpy(PyUnicode_1BYTE_DATA(out), buf, (size_t)(w - (Py_UCS1 *)buf));
    goto done;  /* out is the answer, or NULL with the error set */
none:
    out = Py_None;
    Py_INCREF(out);
done:
    PyMem_Free(buf);
    PyMem_Free(numbers);
    Py_DECREF(cols);
    return out;
}

/* Scanner.slot_objects(cls, fields, columns) -> [cls objects]: object i holds columns[j][i] in its slot fields[j]
   (the list(map(cls, *columns)) of a class whose __init__ only stores its arguments in its slots, such as the
   dataclass ApiEntry, without running Python per object); None when a field is not a writable object slot of cls. */
static PyObject *Scanner_slot_objects(PyObject *unused, PyObject *args) {
    PyTypeObject *cls;
    PyObject *fields, *columns;
    if (!PyArg_ParseTuple(args, "O!O!O!", &PyType_Type, &cls, &PyTuple_Type, &fields, &PyTuple_Type, &columns))
        return NULL;
    Py_ssize_t k = PyTuple_GET_SIZE(fields), n = -1, offsets[16];
    if (k != PyTuple_GET_SIZE(columns) || k > 16) Py_RETURN_NONE;
    for (Py_ssize_t j = 0; j < k; j++) {
        PyObject *name = PyTuple_GET_ITEM(fields, j), *col = PyTuple_GET_ITEM(columns, j);
        if (!PyUnicode_Check(name) || !PyList_Check(col)) Py_RETURN_NONE;
        if (n < 0) n = PyList_GET_SIZE(col);
        if (PyList_GET_SIZE(col) != n) Py_RETURN_NONE;
        PyObject *descr = _PyType_Lookup(cls, name);  /* borrowed */
        if (descr == NULL || Py_TYPE(descr) != &PyMemberDescr_Type) Py_RETURN_NONE;
        PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type != SLOT_OBJECT || (member->flags & SLOT_READONLY)) Py_RETURN_NONE;
        offsets[j] = member->offset;
    }
    if (n < 0) n = 0;
    PyObject *out = PyList_New(n);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *obj = cls->tp_alloc(cls, 0);
        if (obj == NULL) { Py_DECREF(out); return NULL; }
        for (Py_ssize_t j = 0; j < k; j++) {
            PyObject *v = PyList_GET_ITEM(PyTuple_GET_ITEM(columns, j), i);
            Py_INCREF(v);
            *(PyObject **)((char *)obj + offsets[j]) = v;
        }
        PyList_SET_ITEM(out, i, obj);
    }
    return out;
}

/* Scanner.renamed_keys(keys, renames) -> a copy of the list ``keys`` where, for each (first, count, old, new) of
   ``renames``, every key of rows first..first+count that starts with ``old`` has it replaced by ``new`` (the
   built-in normaliser's renumbering of backward calls: match.naming.renumber_backward). */
static PyObject *Scanner_renamed_keys(PyObject *unused, PyObject *args) {
    PyObject *keys, *renames;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &keys, &PyList_Type, &renames)) return NULL;
    PyObject *out = PyList_GetSlice(keys, 0, PyList_GET_SIZE(keys));
    if (out == NULL) return NULL;
    for (Py_ssize_t j = 0; j < PyList_GET_SIZE(renames); j++) {
        Py_ssize_t first, count;
        PyObject *old, *new;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(renames, j), "nnUU", &first, &count, &old, &new)) goto fail;
        Py_ssize_t cut = PyUnicode_GET_LENGTH(old), stop = first + count;
        if (first < 0 || stop > PyList_GET_SIZE(out)) { PyErr_SetString(PyExc_IndexError, "rows out of range"); goto fail; }
        for (Py_ssize_t r = first; r < stop; r++) {
            PyObject *key = PyList_GET_ITEM(out, r);
            if (!PyUnicode_Check(key)) { PyErr_SetString(PyExc_TypeError, "a key is not a str"); goto fail; }
            if (PyUnicode_Tailmatch(key, old, 0, PY_SSIZE_T_MAX, -1) != 1) continue;
            Py_ssize_t len = PyUnicode_GET_LENGTH(key), nlen = PyUnicode_GET_LENGTH(new);
            PyObject *renamed;
            if (PyUnicode_IS_ASCII(key) && PyUnicode_IS_ASCII(new)) {  /* the usual name: one string, one copy */
                renamed = PyUnicode_New(nlen + len - cut, 127);
                if (renamed != NULL) {
                    memcpy(PyUnicode_1BYTE_DATA(renamed), PyUnicode_1BYTE_DATA(new), (size_t)nlen);
                    memcpy(PyUnicode_1BYTE_DATA(renamed) + nlen, PyUnicode_1BYTE_DATA(key) + cut, (size_t)(len - cut));
                }
            } else {  /* its own widest character: as Python's concatenation makes it */
                PyObject *tail = PyUnicode_Substring(key, cut, len);
                renamed = tail ? PyUnicode_Concat(new, tail) : NULL;
                Py_XDECREF(tail);
            }
            if (renamed == NULL) goto fail;
            PyList_SET_ITEM(out, r, renamed);
            Py_DECREF(key);
        }
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* Scanner.category_codes(values, most) -> (distinct values in order of first appearance, codes, bytes per code) of
   a list of str and None with at most ``most`` distinct values (codes: one unsigned integer per value, 1, 2 or 4
   bytes as 256 and 65535 distinct values allow); None for another list (another type, more distinct values). */
static PyObject *Scanner_category_codes(PyObject *unused, PyObject *args) {
    PyObject *values;
    Py_ssize_t most;
    if (!PyArg_ParseTuple(args, "O!n", &PyList_Type, &values, &most)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(values);
    PyObject *code_of = PyDict_New(), *uniques = PyList_New(0), *out = NULL;
    uint32_t *codes = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(uint32_t));
    if (code_of == NULL || uniques == NULL || codes == NULL) goto done;
    PyObject *last = NULL;
    uint32_t last_code = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyList_GET_ITEM(values, i);
        if (v == last) { codes[i] = last_code; continue; }  /* runs of one object: no lookup */
        if (v != Py_None && !PyUnicode_CheckExact(v)) { out = Py_None; Py_INCREF(out); goto done; }
        PyObject *code = PyDict_GetItemWithError(code_of, v);
        if (code == NULL) {
            if (PyErr_Occurred()) goto done;
            if (PyList_GET_SIZE(uniques) >= most) { out = Py_None; Py_INCREF(out); goto done; }
            code = PyLong_FromSsize_t(PyList_GET_SIZE(uniques));
            if (code == NULL || PyDict_SetItem(code_of, v, code) < 0 || PyList_Append(uniques, v) < 0) {
                Py_XDECREF(code);
                goto done;
            }
            Py_DECREF(code);  /* the dict holds it */
        }
        last = v;
        last_code = (uint32_t)PyLong_AsUnsignedLong(code);
        codes[i] = last_code;
    }
    Py_ssize_t k = PyList_GET_SIZE(uniques);
    int width = k <= 256 ? 1 : k <= 65535 ? 2 : 4;
    PyObject *bytes = PyBytes_FromStringAndSize(NULL, n * width);
    if (bytes == NULL) goto done;
    char *w = PyBytes_AS_STRING(bytes);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (width == 1) ((uint8_t *)w)[i] = (uint8_t)codes[i];
        else if (width == 2) ((uint16_t *)w)[i] = (uint16_t)codes[i];
        else ((uint32_t *)w)[i] = codes[i];
    }
    out = Py_BuildValue("(ONi)", uniques, bytes, width);
done:
    PyMem_Free(codes);
    Py_XDECREF(code_of);
    Py_XDECREF(uniques);
    return out;
}

/* The length of the node (call) of a dump.json row name, as the summary's calls.call_node finds it: the name up to
   its last ".forward"/".backward" token followed by a leaf (with a module's call number, "forward.0", when the leaf
   is input/output/parameters), where no later token may decide; -1 for any other name (node_of decides). */
static Py_ssize_t call_node_len(const char *s, Py_ssize_t n) {
    Py_ssize_t at = -1, end = 0;
    for (Py_ssize_t p = n - 9; p >= 0 && at < 0; p--) {
        if (s[p] != '.') continue;
        if (p + 10 <= n && memcmp(s + p, ".backward.", 10) == 0) { at = p; end = 9; }
        else if (memcmp(s + p, ".forward.", 9) == 0) { at = p; end = 8; }
    }
    if (at < 0) return -1;
    const char *leaf = s + at + end + 1, *stop = s + n;
    static const char *const later[] = {"forward", "backward", "parameters_grad"};
    for (int k = 0; k < 3; k++) {  /* a later token may be a direction: node_of decides */
        size_t m = strlen(later[k]);
        for (const char *q = leaf; q + m <= stop; q++)
            if (*q == later[k][0] && memcmp(q, later[k], m) == 0) return -1;
    }
    const char *q = leaf;
    while (q < stop && *q >= '0' && *q <= '9') q++;
    if (q > leaf && q < stop && *q == '.') {  /* digits, then the leaf token */
        const char *t = q + 1, *te = memchr(t, '.', (size_t)(stop - t));
        size_t tl = (size_t)((te ? te : stop) - t);
        if ((tl == 5 && memcmp(t, "input", 5) == 0) || (tl == 6 && memcmp(t, "output", 6) == 0) ||
            (tl == 10 && memcmp(t, "parameters", 10) == 0))
            return q - s;
    }
    return at + end;
}

/* Scanner.call_runs(names, node_before) -> [(row, node)] where a call starts: a run of consecutive rows whose nodes
   are equal (call_node_len), the first continuing node_before's call when it is the same; None when a name is not
   ASCII, holds a NUL or is not a usual row name (the caller asks node_of then). */
static PyObject *Scanner_call_runs(PyObject *unused, PyObject *args) {
    PyObject *names, *before;
    if (!PyArg_ParseTuple(args, "O!O", &PyList_Type, &names, &before)) return NULL;
    const char *prev = NULL;
    Py_ssize_t prevlen = -1;
    if (before != Py_None) {
        if (!PyUnicode_CheckExact(before) || !PyUnicode_IS_ASCII(before)) Py_RETURN_NONE;
        prev = (const char *)PyUnicode_1BYTE_DATA(before);
        prevlen = PyUnicode_GET_LENGTH(before);
    }
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(names); i++) {
        PyObject *v = PyList_GET_ITEM(names, i);
        if (!PyUnicode_CheckExact(v) || !PyUnicode_IS_ASCII(v)) goto none;
        const char *s = (const char *)PyUnicode_1BYTE_DATA(v);
        Py_ssize_t n = PyUnicode_GET_LENGTH(v);
        if (memchr(s, 0, (size_t)n) != NULL) goto none;
        Py_ssize_t len = call_node_len(s, n);
        if (len < 0) goto none;
        if (len == prevlen && memcmp(s, prev, (size_t)len) == 0) continue;
        PyObject *item = Py_BuildValue("(ns#)", i, s, len);
        if (item == NULL || PyList_Append(out, item) < 0) { Py_XDECREF(item); Py_DECREF(out); return NULL; }
        Py_DECREF(item);
        prev = s;
        prevlen = len;
    }
    return out;
none:
    Py_DECREF(out);
    Py_RETURN_NONE;
}

static PyMethodDef module_functions[] = {
    {"join_rows", join_rows, METH_O,
     "join_rows(columns) -> the CSV lines of the rows of these columns of quoted ASCII fields or numbers (None: "
     "not all ASCII)"},
    {"hash_texts", hash_texts, METH_O, "hash_texts(texts) -> bytearray of uint64 key hashes (the index's)"},
    {"row_hashes", row_hashes, METH_VARARGS,
     "row_hashes(heads, nrows, suffix_ids, suffixes) -> bytearray of uint64 compare-key hashes, one per row"},
    {"classify_statistics", classify_statistics, METH_O,
     "classify_statistics(values) -> (kinds, numbers): per value a kind code (float 0, int 1, str 2, None 3, "
     "anything else 4) in a bytearray, and its float64 value (NaN unless a float or an int) in another; None "
     "when an int does not fit a double"},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef Scanner_methods[] = {
    {"slot_objects", (PyCFunction)Scanner_slot_objects, METH_VARARGS | METH_STATIC,
     "slot_objects(cls, fields, columns) -> [cls objects] with columns[j][i] in slot fields[j] of object i (None: "
     "not plain slots)"},
    {"renamed_keys", (PyCFunction)Scanner_renamed_keys, METH_VARARGS | METH_STATIC,
     "renamed_keys(keys, renames) -> keys with each (first, count, old, new) rename applied to those rows"},
    {"category_codes", (PyCFunction)Scanner_category_codes, METH_VARARGS | METH_STATIC,
     "category_codes(values, most) -> (distinct values, codes, bytes per code) of a list of str and None with at "
     "most `most` distinct values, else None"},
    {"call_runs", (PyCFunction)Scanner_call_runs, METH_VARARGS | METH_STATIC,
     "call_runs(names, node_before) -> [(row, node)] where a call of these dump row names starts (None: a name "
     "the caller reads itself)"},
    {"feed", (PyCFunction)Scanner_feed, METH_VARARGS,
     "feed(buffer, final[, offset]) -> bytes consumed, or -1 when the document is left to the Python path "
     "(offset: the file offset of buffer[0], for the index)"},
    {"take_index", (PyCFunction)Scanner_take_index, METH_NOARGS,
     "take_index() -> (columns, suffix texts, dtype texts, data end) of an index scanner"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Scanner_getset[] = {
    {"header", (getter)Scanner_get_header, NULL, "[(key, value bytes)] of the top-level members but data", NULL},
    {"apis", (getter)Scanner_get_apis, NULL, "(keys, prefixes, calls, directions, first rows) of the APIs", NULL},
    {"stats", (getter)Scanner_get_stats, NULL,
     "(kinds, float64 values, {row: other value}) of the Max, Min, Mean and Norm columns", NULL},
    {"md5_seen", (getter)Scanner_get_md5_seen, NULL, "whether some leaf carried an md5", NULL},
    {"done", (getter)Scanner_get_done, NULL, "whether the whole document was read", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "msprobe_core._dumpscan.Scanner",
    .tp_basicsize = sizeof(Scanner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Reads a dump.json block by block into the columns of a table (see the module docstring).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Scanner_init,
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_methods = Scanner_methods,
    .tp_getset = Scanner_getset,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "msprobe_core._dumpscan",
                                    "The C fast path of the dump.json loader.", -1, module_functions};

PyMODINIT_FUNC PyInit__dumpscan(void) {
    crc_init();
    if (PyType_Ready(&ScannerType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&ScannerType);
    if (PyModule_AddObject(m, "Scanner", (PyObject *)&ScannerType) < 0) {
        Py_DECREF(&ScannerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
