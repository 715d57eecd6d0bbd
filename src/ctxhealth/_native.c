/* ctxhealth._native: C versions of the text kernels the Monitor runs on every assistant reply.
 *
 * Each function here computes exactly what a Python function computes (named in its doc string);
 * ctxhealth.native picks these or the Python definitions, and the tests compare the two on
 * any text (hypothesis) and on every text of the real sessions. No fixed-size buffers: every output
 * is sized from its input before it is written; every C-API return is checked.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* fold(): ASCII letters lower-cased, digits and '_' kept, every other byte a space */
static unsigned char RUN_TABLE[128];

static void init_run_table(void) {
    for (int c = 0; c < 128; c++) {
        if (c >= 'A' && c <= 'Z')
            RUN_TABLE[c] = (unsigned char)(c | 0x20);
        else if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '_')
            RUN_TABLE[c] = (unsigned char)c;
        else
            RUN_TABLE[c] = ' ';
    }
}

static Py_UCS4 fold_one(Py_UCS4 ch) {
    if (ch < 128)
        return RUN_TABLE[ch];
    if (ch == 0x212A) /* Kelvin sign: lower-cases to 'k' */
        return 'k';
    return ' ';
}

PyDoc_STRVAR(fold_doc, "fold(text, /)\n--\n\nctxhealth.signals.text.fold_py(text).");

/* one pass per string kind; NULL without an error when the text holds U+0130 (see native_fold) */
#define FOLD_LOOP(TYPE)                                                                             \
    do {                                                                                            \
        const TYPE *p = (const TYPE *)data;                                                         \
        for (Py_ssize_t i = 0; i < n; i++) {                                                        \
            Py_UCS4 ch = p[i];                                                                      \
            if (ch < 128) {                                                                         \
                o[i] = RUN_TABLE[ch];                                                               \
            } else if (ch == 0x130) {                                                               \
                Py_DECREF(out);                                                                     \
                return NULL;                                                                        \
            } else {                                                                                \
                o[i] = ch == 0x212A ? 'k' : ' ';                                                    \
            }                                                                                       \
        }                                                                                           \
    } while (0)

static PyObject *fold_plain(PyObject *arg) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(arg);
    int kind = PyUnicode_KIND(arg);
    const void *data = PyUnicode_DATA(arg);
    PyObject *out = PyBytes_FromStringAndSize(NULL, n);
    if (out == NULL)
        return NULL;
    unsigned char *o = (unsigned char *)PyBytes_AS_STRING(out);
    if (kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *p = (const Py_UCS1 *)data;
        for (Py_ssize_t i = 0; i < n; i++)
            o[i] = p[i] < 128 ? RUN_TABLE[p[i]] : ' ';
    } else if (kind == PyUnicode_2BYTE_KIND) {
        FOLD_LOOP(Py_UCS2);
    } else {
        FOLD_LOOP(Py_UCS4);
    }
    return out;
}

/* a text holding U+0130, which lower-cases to two characters ('i' and U+0307) */
static PyObject *fold_dotted(PyObject *arg) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(arg);
    int kind = PyUnicode_KIND(arg);
    const void *data = PyUnicode_DATA(arg);
    Py_ssize_t extra = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyUnicode_READ(kind, data, i) == 0x130)
            extra++;
    if (extra > PY_SSIZE_T_MAX - n)
        return PyErr_NoMemory();
    PyObject *out = PyBytes_FromStringAndSize(NULL, n + extra);
    if (out == NULL)
        return NULL;
    unsigned char *o = (unsigned char *)PyBytes_AS_STRING(out);
    Py_ssize_t j = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 ch = PyUnicode_READ(kind, data, i);
        if (ch == 0x130) {
            o[j++] = 'i';
            o[j++] = ' ';
        } else {
            o[j++] = (unsigned char)fold_one(ch);
        }
    }
    return out;
}

static PyObject *native_fold(PyObject *self, PyObject *arg) {
    if (!PyUnicode_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "fold() takes a str");
        return NULL;
    }
    PyObject *out = fold_plain(arg);
    if (out == NULL && !PyErr_Occurred())
        out = fold_dotted(arg);
    return out;
}

/* A cache of the table stems() reads: run bytes -> the table's value (a strong reference), so a
 * known run costs a hash and a comparison, not a bytes object and a dict lookup. The table's value
 * for a run never changes (it is a function of the run; the Python side may empty and refill the
 * table, with the same values), so the cache gives what the table gives. Compact, to stay in the
 * CPU's caches between replies: a dense array of entries (the run stored inline) and an open-
 * addressing index of 16-bit entry numbers; emptied when it holds CACHE_LIMIT runs. Runs longer than
 * CACHE_RUN_MAX are looked up in the table only. */
#define CACHE_SLOTS 8192 /* a power of two, at least twice CACHE_LIMIT */
#define CACHE_LIMIT 4096 /* below 65535: an entry number fits the 16-bit index */
#define CACHE_RUN_MAX 20
#define NO_ENTRY 0xFFFFu

typedef struct {
    PyObject *value;
    uint32_t hash;
    uint8_t len;
    uint8_t truth;
    char run[CACHE_RUN_MAX];
} CacheEntry; /* 32 bytes on 64-bit platforms */

static CacheEntry *cache;   /* CACHE_LIMIT entries, allocated at module init */
static uint16_t *cache_ix;  /* CACHE_SLOTS entry numbers or NO_ENTRY */
static Py_ssize_t cache_used;
static PyObject *cache_table; /* the table the cache holds values of (a strong reference) */

static void cache_clear(void) {
    for (Py_ssize_t i = 0; i < cache_used; i++) {
        Py_CLEAR(cache[i].value);
    }
    memset(cache_ix, 0xFF, CACHE_SLOTS * sizeof(uint16_t));
    cache_used = 0;
}

static inline uint32_t run_hash(const unsigned char *s, Py_ssize_t n) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (Py_ssize_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 16777619u;
    }
    return h;
}

/* the index slot of this run: holding its entry, or NO_ENTRY where it would go */
static inline uint16_t *cache_slot(const unsigned char *s, Py_ssize_t n, uint32_t h) {
    size_t i = (size_t)h & (CACHE_SLOTS - 1);
    for (;;) {
        uint16_t *slot = &cache_ix[i];
        if (*slot == NO_ENTRY)
            return slot;
        CacheEntry *e = &cache[*slot];
        if (e->hash == h && e->len == n && memcmp(e->run, s, (size_t)n) == 0)
            return slot;
        i = (i + 1) & (CACHE_SLOTS - 1);
    }
}

PyDoc_STRVAR(stems_doc,
             "stems(folded, table, learn, /)\n--\n\n"
             "The values of table for the space-separated runs of folded, empty ones left out, in order;\n"
             "a run not in table is given to learn(run), which returns its value (and may add it to table).\n"
             "A run's value must never change (the runs seen are cached in C).");

static PyObject *native_stems(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyBytes_Check(args[0]) || !PyDict_Check(args[1]) || !PyCallable_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "stems() takes (bytes, dict, callable)");
        return NULL;
    }
    PyObject *table = args[1];
    PyObject *learn = args[2];
    if (table != cache_table) {
        /* another table: the cache is of the one before */
        cache_clear();
        Py_INCREF(table);
        Py_XSETREF(cache_table, table);
    }
    const unsigned char *s = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    Py_ssize_t n = PyBytes_GET_SIZE(args[0]);
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    Py_ssize_t i = 0;
    while (i < n) {
        while (i < n && s[i] == ' ')
            i++;
        if (i >= n)
            break;
        Py_ssize_t start = i;
        while (i < n && s[i] != ' ')
            i++;
        Py_ssize_t len = i - start;
        uint16_t *slot = NULL;
        uint32_t h = 0;
        if (len <= CACHE_RUN_MAX) {
            h = run_hash(s + start, len);
            slot = cache_slot(s + start, len, h);
            if (*slot != NO_ENTRY) {
                CacheEntry *e = &cache[*slot];
                if (e->truth && PyList_Append(out, e->value) < 0)
                    goto error;
                continue;
            }
        }
        PyObject *key = PyBytes_FromStringAndSize((const char *)s + start, len);
        if (key == NULL)
            goto error;
        PyObject *value = PyDict_GetItemWithError(table, key); /* borrowed */
        if (value != NULL) {
            Py_INCREF(value);
        } else if (!PyErr_Occurred()) {
            value = PyObject_CallOneArg(learn, key); /* may run any Python code */
        }
        Py_DECREF(key);
        if (value == NULL)
            goto error;
        int truth = PyObject_IsTrue(value);
        if (truth < 0 || (truth && PyList_Append(out, value) < 0)) {
            Py_DECREF(value);
            goto error;
        }
        if (slot != NULL && table == cache_table) {
            /* learn() may have run stems() again and filled the cache: find the slot afresh */
            slot = cache_slot(s + start, len, h);
            if (*slot != NO_ENTRY) {
                Py_DECREF(value);
                continue;
            }
            if (cache_used >= CACHE_LIMIT) {
                cache_clear();
                slot = cache_slot(s + start, len, h);
            }
            CacheEntry *e = &cache[cache_used];
            e->value = value; /* the cache keeps the reference */
            e->hash = h;
            e->len = (uint8_t)len;
            e->truth = (uint8_t)truth;
            memcpy(e->run, s + start, (size_t)len);
            *slot = (uint16_t)cache_used;
            cache_used++;
        } else {
            Py_DECREF(value);
        }
    }
    return out;
error:
    Py_DECREF(out);
    return NULL;
}

PyDoc_STRVAR(clear_cache_doc, "clear_cache()\n--\n\nEmpty the cache of stems() (for tests).");

static PyObject *native_clear_cache(PyObject *self, PyObject *unused) {
    cache_clear();
    Py_RETURN_NONE;
}

static int is_word(Py_UCS4 ch) { return ch == '_' || Py_UNICODE_ISALNUM(ch); }

PyDoc_STRVAR(whole_runs_doc,
             "whole_runs(base, folded, words, /)\n--\n\n"
             "How many space-separated runs of folded are one of words (a tuple of bytes) and adjoin no\n"
             "word character of base (folded is base position for position, see hedging._verified).");

static PyObject *native_whole_runs(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyUnicode_Check(args[0]) || !PyBytes_Check(args[1]) || !PyTuple_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "whole_runs() takes (str, bytes, tuple of bytes)");
        return NULL;
    }
    PyObject *base = args[0];
    PyObject *words = args[2];
    Py_ssize_t nwords = PyTuple_GET_SIZE(words);
    /* the lengths and first bytes of the words: most runs are rejected on these */
    Py_ssize_t minlen = PY_SSIZE_T_MAX, maxlen = 0;
    unsigned char firsts[256];
    memset(firsts, 0, sizeof firsts);
    for (Py_ssize_t w = 0; w < nwords; w++) {
        PyObject *word = PyTuple_GET_ITEM(words, w);
        if (!PyBytes_Check(word) || PyBytes_GET_SIZE(word) == 0) {
            PyErr_SetString(PyExc_TypeError, "whole_runs() words must be non-empty bytes");
            return NULL;
        }
        Py_ssize_t len = PyBytes_GET_SIZE(word);
        minlen = len < minlen ? len : minlen;
        maxlen = len > maxlen ? len : maxlen;
        firsts[(unsigned char)PyBytes_AS_STRING(word)[0]] = 1;
    }
    int kind = PyUnicode_KIND(base);
    const void *data = PyUnicode_DATA(base);
    Py_ssize_t blen = PyUnicode_GET_LENGTH(base);
    const char *s = PyBytes_AS_STRING(args[1]);
    Py_ssize_t n = PyBytes_GET_SIZE(args[1]);
    long count = 0;
    Py_ssize_t i = 0;
    while (i < n) {
        while (i < n && s[i] == ' ')
            i++;
        if (i >= n)
            break;
        Py_ssize_t start = i;
        while (i < n && s[i] != ' ')
            i++;
        Py_ssize_t len = i - start;
        if (len < minlen || len > maxlen || !firsts[(unsigned char)s[start]])
            continue;
        int found = 0;
        for (Py_ssize_t w = 0; w < nwords && !found; w++) {
            PyObject *word = PyTuple_GET_ITEM(words, w);
            found = PyBytes_GET_SIZE(word) == len && memcmp(PyBytes_AS_STRING(word), s + start, len) == 0;
        }
        if (!found)
            continue;
        if (start > 0 && start - 1 < blen && is_word(PyUnicode_READ(kind, data, start - 1)))
            continue;
        if (i < n && i < blen && is_word(PyUnicode_READ(kind, data, i)))
            continue;
        count++;
    }
    return PyLong_FromLong(count);
}

/* CRC-32 (zlib's, reflected polynomial 0xEDB88320) and Adler-32, as zlib.crc32 / zlib.adler32 */
static uint32_t CRC_TABLE[256];
/* CRC_SLICE[k][b]: the register after byte b and then k zero bytes (slicing by 8: eight bytes per
   step, eight independent lookups instead of a chain of eight) */
static uint32_t CRC_SLICE[8][256];

static void init_crc_table(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        CRC_TABLE[n] = c;
    }
    for (int n = 0; n < 256; n++) {
        uint32_t c = CRC_TABLE[n];
        CRC_SLICE[0][n] = c;
        for (int k = 1; k < 8; k++) {
            c = CRC_TABLE[c & 0xFF] ^ (c >> 8);
            CRC_SLICE[k][n] = c;
        }
    }
}

/* the complemented CRC-32 register after the bytes s[0:n] (zlib.crc32 runs the same arithmetic) */
static uint32_t crc_bytes(uint32_t crc, const unsigned char *s, size_t n) {
    while (n >= 8) {
        uint32_t lo = crc ^ ((uint32_t)s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 | (uint32_t)s[3] << 24);
        crc = CRC_SLICE[7][lo & 0xFF] ^ CRC_SLICE[6][(lo >> 8) & 0xFF] ^ CRC_SLICE[5][(lo >> 16) & 0xFF] ^
              CRC_SLICE[4][lo >> 24] ^ CRC_SLICE[3][s[4]] ^ CRC_SLICE[2][s[5]] ^ CRC_SLICE[1][s[6]] ^
              CRC_SLICE[0][s[7]];
        s += 8;
        n -= 8;
    }
    while (n--)
        crc = CRC_TABLE[(crc ^ *s++) & 0xFF] ^ (crc >> 8);
    return crc;
}

#define ADLER_MOD 65521u
#define ADLER_NMAX 5552u

#define ADLER_LANES 32

/* the Adler-32 sums after the bytes s[0:n] (zlib.adler32's value, reduced every NMAX bytes). Within
   a block of k bytes starting from (a, b): a gains the byte sum and b gains k * a plus each byte
   weighted by how many prefixes hold it (k - j for byte j). The bytes are summed in 32 lanes (one
   per position in a 32-byte chunk: lane[i]) with, per lane, the sum of its values before each
   chunk (before[i]): byte j = 32c + i weighs 32 (m - 1 - c) + (32 - i), so the block adds
   32 * sum(before) + sum((32 - i) * lane[i]); no chain of dependent adds (the compiler
   vectorises the lanes). Bounds over a block (m <= 173 chunks): lane[i] <= 255 m, before[i] <=
   255 m^2 / 2 < 2^32; the sums are 64-bit. */
static void adler_bytes(uint32_t *pa, uint32_t *pb, const unsigned char *s, size_t n) {
    uint64_t a = *pa, b = *pb;
    while (n) {
        size_t k = n < ADLER_NMAX ? n : ADLER_NMAX;
        n -= k;
        size_t m = k / ADLER_LANES;
        uint32_t lane[ADLER_LANES] = {0}, before[ADLER_LANES] = {0};
        for (size_t c = 0; c < m; c++, s += ADLER_LANES)
            for (int i = 0; i < ADLER_LANES; i++) {
                before[i] += lane[i];
                lane[i] += s[i];
            }
        uint64_t sum = 0, weighted = 0, prior = 0;
        for (int i = 0; i < ADLER_LANES; i++) {
            sum += lane[i];
            weighted += (uint64_t)(ADLER_LANES - i) * lane[i];
            prior += before[i];
        }
        b += (uint64_t)(m * ADLER_LANES) * a + ADLER_LANES * prior + weighted;
        a += sum;
        for (size_t r = k - m * ADLER_LANES; r; r--) {
            a += *s++;
            b += a;
        }
        a %= ADLER_MOD;
        b %= ADLER_MOD;
    }
    *pa = (uint32_t)a;
    *pb = (uint32_t)b;
}

PyDoc_STRVAR(adler32_doc, "adler32(data, /)\n--\n\nzlib.adler32(data): the Adler-32 of a bytes object.");

static PyObject *native_adler32(PyObject *self, PyObject *arg) {
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "adler32() takes bytes");
        return NULL;
    }
    uint32_t a = 1, b = 0;
    adler_bytes(&a, &b, (const unsigned char *)PyBytes_AS_STRING(arg), (size_t)PyBytes_GET_SIZE(arg));
    return PyLong_FromUnsignedLong(((unsigned long)b << 16) | a);
}

/* stable_hash of bytes s[0:n]: crc32 << 32 | adler32 */
static PyObject *bytes_hash(const unsigned char *s, size_t n) {
    uint64_t crc = (uint64_t)(crc_bytes(0xFFFFFFFFu, s, n) ^ 0xFFFFFFFFu);
    uint32_t a = 1, b = 0;
    adler_bytes(&a, &b, s, n);
    return PyLong_FromUnsignedLongLong((crc << 32) | ((uint64_t)b << 16) | a);
}

/* one code point as UTF-8 at o (a lone surrogate as three bytes, as "surrogatepass" writes it) */
static inline unsigned char *put_utf8(unsigned char *o, Py_UCS4 ch) {
    if (ch < 0x80) {
        *o++ = (unsigned char)ch;
    } else if (ch < 0x800) {
        *o++ = (unsigned char)(0xC0 | (ch >> 6));
        *o++ = (unsigned char)(0x80 | (ch & 0x3F));
    } else if (ch < 0x10000) {
        *o++ = (unsigned char)(0xE0 | (ch >> 12));
        *o++ = (unsigned char)(0x80 | ((ch >> 6) & 0x3F));
        *o++ = (unsigned char)(0x80 | (ch & 0x3F));
    } else {
        *o++ = (unsigned char)(0xF0 | (ch >> 18));
        *o++ = (unsigned char)(0x80 | ((ch >> 12) & 0x3F));
        *o++ = (unsigned char)(0x80 | ((ch >> 6) & 0x3F));
        *o++ = (unsigned char)(0x80 | (ch & 0x3F));
    }
    return o;
}

#define HASH_STACK 8192

/* room for the UTF-8 of `chars` characters (at most 4 bytes each): `stack` (HASH_STACK bytes) when
   it fits, else a heap block, also left in *heap for the caller to PyMem_Free (NULL there when the
   stack is used); NULL with MemoryError set when there is no room */
static unsigned char *utf8_room(unsigned char *stack, Py_ssize_t chars, unsigned char **heap) {
    *heap = NULL;
    if (chars <= HASH_STACK / 4)
        return stack;
    *heap = PyMem_Malloc((size_t)chars * 4);
    if (*heap == NULL)
        PyErr_NoMemory();
    return *heap;
}

/* " ".join(text[start:end].split()) as UTF-8 at o; the end of what was written (at most 4 bytes
   per character) */
/* one loop per string kind (no kind switch per character); ASCII written without put_utf8 */
#define SPACED_LOOP(TYPE)                                                                           \
    do {                                                                                            \
        const TYPE *p = (const TYPE *)data;                                                         \
        for (Py_ssize_t i = start; i < end; i++) {                                                  \
            Py_UCS4 ch = p[i];                                                                      \
            if (ch < 128) {                                                                         \
                if (Py_UNICODE_ISSPACE(ch)) {                                                       \
                    space = o != first;                                                             \
                    continue;                                                                       \
                }                                                                                   \
                if (space) {                                                                        \
                    *o++ = ' ';                                                                     \
                    space = 0;                                                                      \
                }                                                                                   \
                *o++ = (unsigned char)ch;                                                           \
                continue;                                                                           \
            }                                                                                       \
            if (Py_UNICODE_ISSPACE(ch)) {                                                           \
                space = o != first;                                                                 \
                continue;                                                                           \
            }                                                                                       \
            if (space) {                                                                            \
                *o++ = ' ';                                                                         \
                space = 0;                                                                          \
            }                                                                                       \
            o = put_utf8(o, ch);                                                                    \
        }                                                                                           \
    } while (0)

static unsigned char *spaced_utf8(unsigned char *o, int kind, const void *data, Py_ssize_t start,
                                  Py_ssize_t end) {
    unsigned char *first = o;
    int space = 0;
    if (kind == PyUnicode_1BYTE_KIND)
        SPACED_LOOP(Py_UCS1);
    else if (kind == PyUnicode_2BYTE_KIND)
        SPACED_LOOP(Py_UCS2);
    else
        SPACED_LOOP(Py_UCS4);
    return o;
}

PyDoc_STRVAR(spaced_hash_doc,
             "spaced_hash(prefix, text, /)\n--\n\n"
             "ctxhealth.signals.base.spaced_hash_py(prefix, text): stable_hash(prefix + ' '.join(text.split())),\n"
             "without building the joined text.");

static PyObject *native_spaced_hash(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyUnicode_Check(args[0]) || !PyUnicode_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "spaced_hash() takes (str, str)");
        return NULL;
    }
    PyObject *prefix = args[0];
    PyObject *text = args[1];
    int pkind = PyUnicode_KIND(prefix);
    const void *pdata = PyUnicode_DATA(prefix);
    Py_ssize_t pn = PyUnicode_GET_LENGTH(prefix);
    Py_ssize_t tn = PyUnicode_GET_LENGTH(text);
    unsigned char stack[HASH_STACK];
    unsigned char *heap;
    unsigned char *buf = utf8_room(stack, pn + tn, &heap);
    if (buf == NULL)
        return NULL;
    unsigned char *o = buf;
    for (Py_ssize_t i = 0; i < pn; i++)
        o = put_utf8(o, PyUnicode_READ(pkind, pdata, i));
    o = spaced_utf8(o, PyUnicode_KIND(text), PyUnicode_DATA(text), 0, tn);
    PyObject *value = bytes_hash(buf, (size_t)(o - buf));
    PyMem_Free(heap);
    return value;
}

/* stable_hash(" ".join(text[start:end].split())) as an int: crc32 << 32 | adler32 of its UTF-8 */
static PyObject *span_hash(int kind, const void *data, Py_ssize_t start, Py_ssize_t end) {
    unsigned char stack[HASH_STACK];
    unsigned char *heap;
    unsigned char *buf = utf8_room(stack, end - start, &heap);
    if (buf == NULL)
        return NULL;
    unsigned char *o = spaced_utf8(buf, kind, data, start, end);
    PyObject *value = bytes_hash(buf, (size_t)(o - buf));
    PyMem_Free(heap);
    return value;
}

/* a growable byte buffer for key_text */
typedef struct {
    unsigned char *p;
    size_t len, cap;
} Buf;

static int buf_reserve(Buf *b, size_t more) {
    if (b->len + more <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more)
        cap *= 2;
    unsigned char *p = PyMem_Realloc(b->p, cap);
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

static int buf_str(Buf *b, PyObject *text, int spaced) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (n == 0)
        return 0; /* nothing to write (and no memcpy to a buffer not yet allocated) */
    if (!spaced && PyUnicode_IS_ASCII(text)) {
        if (buf_reserve(b, (size_t)n) < 0)
            return -1;
        memcpy(b->p + b->len, PyUnicode_DATA(text), (size_t)n);
        b->len += (size_t)n;
        return 0;
    }
    if (!spaced && n > 64) {
        /* a long text as it is (a file body): CPython's encoder is faster than a character loop */
        PyObject *data = PyUnicode_AsEncodedString(text, "utf-8", "surrogatepass");
        if (data == NULL)
            return -1;
        Py_ssize_t size = PyBytes_GET_SIZE(data);
        int rc = buf_reserve(b, (size_t)size);
        if (rc == 0) {
            memcpy(b->p + b->len, PyBytes_AS_STRING(data), (size_t)size);
            b->len += (size_t)size;
        }
        Py_DECREF(data);
        return rc;
    }
    if (buf_reserve(b, (size_t)n * 4) < 0)
        return -1;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    unsigned char *o = b->p + b->len;
    if (spaced) {
        o = spaced_utf8(o, kind, data, 0, n);
    } else {
        for (Py_ssize_t i = 0; i < n; i++)
            o = put_utf8(o, PyUnicode_READ(kind, data, i));
    }
    b->len = (size_t)(o - b->p);
    return 0;
}

static int buf_byte(Buf *b, unsigned char c) {
    if (buf_reserve(b, 1) < 0)
        return -1;
    b->p[b->len++] = c;
    return 0;
}

#define KEY_SPACED_LIMIT 1000
#define KEY_DEPTH_LIMIT 64

/* normalise_text(value) into b: 0, -1 on an error, 1 when value holds what only the Python
   definition handles (another type, a key that is not a str, deep nesting) */
static int key_parts(Buf *b, PyObject *value, int depth) {
    if (depth > KEY_DEPTH_LIMIT)
        return 1;
    if (PyUnicode_CheckExact(value))
        return buf_str(b, value, PyUnicode_GET_LENGTH(value) <= KEY_SPACED_LIMIT);
    if (PyDict_CheckExact(value)) {
        PyObject *keys = PyDict_Keys(value);
        if (keys == NULL)
            return -1;
        Py_ssize_t n = PyList_GET_SIZE(keys);
        for (Py_ssize_t i = 0; i < n; i++) {
            if (!PyUnicode_CheckExact(PyList_GET_ITEM(keys, i))) {
                Py_DECREF(keys);
                return 1;
            }
        }
        /* distinct str keys: sorting the items is sorting the keys */
        int rc = PyList_Sort(keys) < 0 ? -1 : buf_byte(b, '{');
        for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
            PyObject *key = PyList_GET_ITEM(keys, i);
            PyObject *item = PyDict_GetItemWithError(value, key);
            if (item == NULL) {
                rc = PyErr_Occurred() ? -1 : 1;
                break;
            }
            Py_INCREF(item);
            if (i)
                rc = buf_byte(b, ',');
            if (rc == 0)
                rc = buf_str(b, key, 0);
            if (rc == 0)
                rc = buf_byte(b, '=');
            if (rc == 0)
                rc = key_parts(b, item, depth + 1);
            Py_DECREF(item);
        }
        Py_DECREF(keys);
        return rc != 0 ? rc : buf_byte(b, '}');
    }
    if (PyList_CheckExact(value) || PyTuple_CheckExact(value)) {
        PyObject *seq = PySequence_Fast(value, "");
        if (seq == NULL)
            return -1;
        int rc = buf_byte(b, '[');
        /* only exact JSON types are converted (no user code runs): the size is read each time anyway */
        for (Py_ssize_t i = 0; rc == 0 && i < PySequence_Fast_GET_SIZE(seq); i++) {
            PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
            Py_INCREF(item);
            if (i)
                rc = buf_byte(b, ',');
            if (rc == 0)
                rc = key_parts(b, item, depth + 1);
            Py_DECREF(item);
        }
        Py_DECREF(seq);
        return rc != 0 ? rc : buf_byte(b, ']');
    }
    if (value == Py_None || PyBool_Check(value) || PyLong_CheckExact(value) || PyFloat_CheckExact(value)) {
        PyObject *text = PyObject_Str(value);
        if (text == NULL)
            return -1;
        int rc = buf_str(b, text, 0);
        Py_DECREF(text);
        return rc;
    }
    return 1;
}

PyDoc_STRVAR(key_text_doc,
             "key_text(prefix, value, /)\n--\n\n"
             "(prefix + ctxhealth.signals.base.normalise_text(value)).encode('utf-8', 'surrogatepass'),\n"
             "written in one pass; None when value holds anything but str, int, float, bool, None and\n"
             "lists, tuples and dicts with str keys of them (nested at most 64 deep).");

static PyObject *native_key_text(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "key_text() takes (str, value)");
        return NULL;
    }
    Buf b = {NULL, 0, 0};
    int rc = buf_str(&b, args[0], 0);
    if (rc == 0)
        rc = key_parts(&b, args[1], 0);
    PyObject *out = NULL;
    if (rc == 0)
        out = PyBytes_FromStringAndSize((const char *)b.p, (Py_ssize_t)b.len);
    else if (rc == 1) {
        out = Py_None;
        Py_INCREF(out);
    }
    PyMem_Free(b.p);
    return out;
}

PyDoc_STRVAR(lead_segments_doc,
             "lead_segments(lines, lead, /)\n--\n\n"
             "calls._lead_segments_py(lines, lead): (segment, first word) of each line of lines (split at\n"
             "'\\n') whose first word holds '=' or '/', starts with 'python' or is in the frozenset lead.");

static PyObject *native_lead_segments(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyUnicode_Check(args[0]) || !PyFrozenSet_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "lead_segments() takes (str, frozenset)");
        return NULL;
    }
    PyObject *text = args[0];
    PyObject *lead = args[1];
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    Py_ssize_t start = 0;
    while (start <= n) {
        Py_ssize_t end = start;
        while (end < n && PyUnicode_READ(kind, data, end) != '\n')
            end++;
        Py_ssize_t w = start;
        while (w < end && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, w)))
            w++;
        Py_ssize_t we = w;
        int marked = 0; /* the word holds '=' or '/' */
        while (we < end) {
            Py_UCS4 ch = PyUnicode_READ(kind, data, we);
            if (Py_UNICODE_ISSPACE(ch))
                break;
            marked |= ch == '=' || ch == '/';
            we++;
        }
        if (we > w) {
            int wanted = marked;
            if (!wanted && we - w >= 6) {
                static const char python[] = "python";
                wanted = 1;
                for (int k = 0; k < 6 && wanted; k++)
                    wanted = PyUnicode_READ(kind, data, w + k) == (Py_UCS4)python[k];
            }
            PyObject *word = PyUnicode_Substring(text, w, we);
            if (word == NULL)
                goto fail;
            if (!wanted) {
                wanted = PySet_Contains(lead, word);
                if (wanted < 0) {
                    Py_DECREF(word);
                    goto fail;
                }
            }
            if (wanted) {
                PyObject *segment = PyUnicode_Substring(text, start, end);
                PyObject *pair = segment == NULL ? NULL : PyTuple_Pack(2, segment, word);
                Py_XDECREF(segment);
                if (pair == NULL || PyList_Append(out, pair) < 0) {
                    Py_XDECREF(pair);
                    Py_DECREF(word);
                    goto fail;
                }
                Py_DECREF(pair);
            }
            Py_DECREF(word);
        }
        start = end + 1;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

PyDoc_STRVAR(sentence_hashes_doc,
             "sentence_hashes(found, /)\n--\n\n"
             "ctxhealth.signals.indicators.sentence_hashes_py(found): for each str, its whitespace\n"
             "normalised (' '.join(s.split())), as UTF-8 (surrogatepass), crc32 << 32 | adler32.");

static PyObject *native_sentence_hashes(PyObject *self, PyObject *arg) {
    if (!PyList_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "sentence_hashes() takes a list of str");
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(arg);
    PyObject *out = PyList_New(count);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *s = PyList_GET_ITEM(arg, k);
        if (!PyUnicode_Check(s)) {
            PyErr_SetString(PyExc_TypeError, "sentence_hashes() takes a list of str");
            Py_DECREF(out);
            return NULL;
        }
        PyObject *value = span_hash(PyUnicode_KIND(s), PyUnicode_DATA(s), 0, PyUnicode_GET_LENGTH(s));
        if (value == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, k, value);
    }
    return out;
}

/* The first two characters of ASCII needles, as a bit per pair: a position whose pair has no bit
   starts no needle, so most positions are passed over with one lookup instead of a walk along the
   needles of their first character. A needle of one character sets every pair it starts. */
typedef struct {
    uint64_t bits[128 * 128 / 64];
} Pairs;

static void pairs_init(Pairs *pairs, PyObject *needles) {
    memset(pairs, 0, sizeof(*pairs));
    Py_ssize_t nn = PyTuple_GET_SIZE(needles);
    for (Py_ssize_t k = 0; k < nn; k++) {
        PyObject *needle = PyTuple_GET_ITEM(needles, k);
        const Py_UCS1 *p = PyUnicode_1BYTE_DATA(needle);
        unsigned first = p[0];
        if (PyUnicode_GET_LENGTH(needle) == 1) {
            for (unsigned c = 0; c < 128; c++)
                pairs->bits[(first * 128 + c) >> 6] |= (uint64_t)1 << ((first * 128 + c) & 63);
        } else {
            unsigned pair = first * 128 + p[1];
            pairs->bits[pair >> 6] |= (uint64_t)1 << (pair & 63);
        }
    }
}

/* whether a needle may start at i: its first character there and, unless i is the last position,
   a pair some needle starts with (a needle of one character sets every pair of its first) */
static inline int pairs_may_start(const Pairs *pairs, int kind, const void *data, Py_ssize_t n, Py_ssize_t i,
                                  Py_UCS4 ch) {
    if (i + 1 >= n)
        return 1; /* the walk checks lengths */
    Py_UCS4 next = PyUnicode_READ(kind, data, i + 1);
    if (next >= 128)
        next = 0; /* no needle has it second: pair (ch, 0) is set only by a one-character needle */
    unsigned pair = ch * 128 + next;
    return (pairs->bits[pair >> 6] >> (pair & 63)) & 1;
}

/* A tuple of non-empty ASCII needles, chained by their first character (head[c] is the first
   needle starting with c, chain[k] the next one) and filtered by their first two characters. */
typedef struct {
    PyObject *tuple;
    Py_ssize_t head[128];
    Py_ssize_t *chain;
    Pairs pairs;
} Needles;

/* 0, or -1 with an exception set (who names the function in the message) */
static int needles_init(Needles *nd, PyObject *needles, const char *who) {
    Py_ssize_t nn = PyTuple_GET_SIZE(needles);
    for (Py_ssize_t k = 0; k < nn; k++) {
        PyObject *needle = PyTuple_GET_ITEM(needles, k);
        if (!PyUnicode_Check(needle) || !PyUnicode_IS_ASCII(needle) || PyUnicode_GET_LENGTH(needle) == 0) {
            PyErr_Format(PyExc_ValueError, "%s() needles must be non-empty ASCII str", who);
            return -1;
        }
    }
    nd->tuple = needles;
    for (int c = 0; c < 128; c++)
        nd->head[c] = -1;
    nd->chain = PyMem_New(Py_ssize_t, nn ? nn : 1);
    if (nd->chain == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = nn - 1; k >= 0; k--) {
        Py_UCS1 c = PyUnicode_1BYTE_DATA(PyTuple_GET_ITEM(needles, k))[0];
        nd->chain[k] = nd->head[c];
        nd->head[c] = k;
    }
    pairs_init(&nd->pairs, needles);
    return 0;
}

static void needles_free(Needles *nd) { PyMem_Free(nd->chain); }

/* whether one of the needles starts at position i of the text */
static inline int needles_start_at(const Needles *nd, int kind, const void *data, Py_ssize_t n, Py_ssize_t i) {
    Py_UCS4 ch = PyUnicode_READ(kind, data, i);
    if (ch >= 128 || nd->head[ch] < 0 || !pairs_may_start(&nd->pairs, kind, data, n, i, ch))
        return 0;
    for (Py_ssize_t k = nd->head[ch]; k >= 0; k = nd->chain[k]) {
        PyObject *needle = PyTuple_GET_ITEM(nd->tuple, k);
        const Py_UCS1 *p = PyUnicode_1BYTE_DATA(needle);
        Py_ssize_t m = PyUnicode_GET_LENGTH(needle);
        if (m > n - i)
            continue;
        Py_ssize_t j = 1;
        while (j < m && PyUnicode_READ(kind, data, i + j) == p[j])
            j++;
        if (j == m)
            return 1;
    }
    return 0;
}

PyDoc_STRVAR(any_in_doc,
             "any_in(text, needles, /)\n--\n\n"
             "any(needle in text for needle in needles), for a tuple of non-empty ASCII str needles.");

static PyObject *native_any_in(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyUnicode_Check(args[0]) || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "any_in() takes (str, tuple of str)");
        return NULL;
    }
    PyObject *text = args[0];
    Needles nd;
    if (needles_init(&nd, args[1], "any_in") < 0)
        return NULL;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int found = 0;
    for (Py_ssize_t i = 0; i < n && !found; i++)
        found = needles_start_at(&nd, kind, data, n, i);
    needles_free(&nd);
    return PyBool_FromLong(found);
}

PyDoc_STRVAR(last_positions_doc,
             "last_positions(stems, words, base, start, /)\n--\n\n"
             "ctxhealth.signals.drift._last_positions_py(stems, words, base, start): for each of words\n"
             "(a frozenset of str) found in stems[start:], base + the index of its last occurrence in\n"
             "stems; the dict in the order of words.intersection(stems[start:]).");

static PyObject *native_last_positions(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !PyList_Check(args[0]) || !PyFrozenSet_Check(args[1]) || !PyLong_Check(args[2]) ||
        !PyLong_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "last_positions() takes (list, frozenset, int, int)");
        return NULL;
    }
    PyObject *stems = args[0];
    PyObject *words = args[1];
    Py_ssize_t base = PyLong_AsSsize_t(args[2]);
    if (base == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t start = PyLong_AsSsize_t(args[3]);
    if (start == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(stems);
    if (start < 0)
        start = 0;
    PyObject *found = PySet_New(NULL);
    if (found == NULL)
        return NULL;
    PyObject *last = NULL, *out = NULL, *iter = NULL, *item;
    /* found: words.intersection(stems[start:]), built as set.intersection builds it (same order) */
    for (Py_ssize_t i = start; i < PyList_GET_SIZE(stems); i++) {
        item = PyList_GET_ITEM(stems, i);
        Py_INCREF(item);
        int has = PySet_Contains(words, item);
        if (has > 0)
            has = PySet_Add(found, item) < 0 ? -1 : 1;
        Py_DECREF(item);
        if (has < 0)
            goto error;
    }
    Py_ssize_t want = PySet_GET_SIZE(found);
    out = PyDict_New();
    if (out == NULL || want == 0)
        goto done;
    /* the last occurrence of each: scanning from the end, the first time a word is met */
    last = PyDict_New();
    if (last == NULL)
        goto error;
    n = PyList_GET_SIZE(stems);
    for (Py_ssize_t i = n - 1; i >= 0 && PyDict_GET_SIZE(last) < want; i--) {
        if (i >= PyList_GET_SIZE(stems))
            continue; /* an item's __eq__ shrank the list: never read past its end */
        item = PyList_GET_ITEM(stems, i);
        Py_INCREF(item);
        int has = PySet_Contains(found, item);
        if (has > 0) {
            has = PyDict_Contains(last, item);
            if (has == 0) {
                PyObject *pos = PyLong_FromSsize_t(base + i);
                has = pos == NULL ? -1 : PyDict_SetItem(last, item, pos);
                Py_XDECREF(pos);
            }
        }
        Py_DECREF(item);
        if (has < 0)
            goto error;
    }
    iter = PyObject_GetIter(found);
    if (iter == NULL)
        goto error;
    while ((item = PyIter_Next(iter)) != NULL) {
        PyObject *pos = PyDict_GetItemWithError(last, item); /* borrowed */
        int bad = pos == NULL ? -1 : PyDict_SetItem(out, item, pos);
        if (pos == NULL && !PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "last_positions(): the list changed while read");
        Py_DECREF(item);
        if (bad < 0)
            goto error;
    }
    if (PyErr_Occurred())
        goto error;
done:
    Py_DECREF(found);
    Py_XDECREF(last);
    Py_XDECREF(iter);
    return out;
error:
    Py_DECREF(found);
    Py_XDECREF(last);
    Py_XDECREF(iter);
    Py_XDECREF(out);
    return NULL;
}

/* stem(): the suffixes in the order they are tried (text._SUFFIXES) */
static const char *const SUFFIXES[] = {"ization", "ations", "ation", "ments", "ment", "ingly", "ings", "ing",
                                       "edly",    "ies",    "ied",   "ed",    "es",   "ly",    "s"};

PyDoc_STRVAR(stem_run_doc,
             "stem_run(run, stop_words, /)\n--\n\n"
             "ctxhealth.signals.text._stem_run_py(run) for an ASCII run: its word from the first byte\n"
             "that is not a digit or '_' on, '' when shorter than 3 or one of stop_words, else stem(word).");

static PyObject *native_stem_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyBytes_Check(args[0]) || !PyAnySet_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "stem_run() takes (bytes, frozenset)");
        return NULL;
    }
    const unsigned char *s = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    Py_ssize_t n = PyBytes_GET_SIZE(args[0]);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (s[i] >= 128) {
            PyErr_SetString(PyExc_ValueError, "stem_run() takes an ASCII run");
            return NULL;
        }
    }
    Py_ssize_t start = 0;
    while (start < n && ((s[start] >= '0' && s[start] <= '9') || s[start] == '_'))
        start++;
    Py_ssize_t len = n - start;
    if (len < 3)
        return PyUnicode_FromStringAndSize("", 0);
    PyObject *word = PyUnicode_DecodeASCII((const char *)s + start, len, NULL);
    if (word == NULL)
        return NULL;
    int stop = PySet_Contains(args[1], word);
    if (stop != 0) {
        Py_DECREF(word);
        return stop < 0 ? NULL : PyUnicode_FromStringAndSize("", 0);
    }
    Py_DECREF(word);
    /* the word lower-cased (ASCII), then its first suffix that leaves 3 characters stripped */
    char *w = PyMem_Malloc((size_t)len + 1);
    if (w == NULL)
        return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < len; i++) {
        unsigned char c = s[start + i];
        w[i] = (char)(c >= 'A' && c <= 'Z' ? c | 0x20 : c);
    }
    Py_ssize_t keep = len;
    int add_y = 0;
    for (size_t k = 0; k < sizeof SUFFIXES / sizeof SUFFIXES[0]; k++) {
        Py_ssize_t m = (Py_ssize_t)strlen(SUFFIXES[k]);
        if (len - m >= 3 && memcmp(w + len - m, SUFFIXES[k], (size_t)m) == 0) {
            keep = len - m;
            add_y = strcmp(SUFFIXES[k], "ies") == 0 || strcmp(SUFFIXES[k], "ied") == 0;
            break;
        }
    }
    if (add_y)
        w[keep++] = 'y'; /* keep < len: within the buffer */
    PyObject *out = PyUnicode_DecodeASCII(w, keep, NULL);
    PyMem_Free(w);
    return out;
}

PyDoc_STRVAR(text_sentence_hashes_doc,
             "text_sentence_hashes(text, minimum, lower=False, /)\n--\n\n"
             "sentence_hashes(the maximal runs of text without '.', '!', '?' or a newline, at least\n"
             "minimum characters long): indicators.sentence_hashes_py(indicators.sentences(text)).\n"
             "lower: the same of text.lower(), each character lower-cased as it is hashed (no lowered\n"
             "copy); None when text holds U+0130 or U+03A3, the two characters whose str.lower() is\n"
             "not their own simple lower case (two characters; a final sigma by context).");

/* One pass per string kind over the sentence ends; a sentence long enough is then written,
   whitespace normalised and lower-cased when asked, as UTF-8 into the buffer and hashed at once
   (CRC sliced by 8). Short ones are passed over (most lines of a reply are). */
#define SENTENCE_LOOP(TYPE)                                                                         \
    do {                                                                                            \
        const TYPE *p = (const TYPE *)data;                                                         \
        for (Py_ssize_t i = 0; i <= n; i++) {                                                       \
            Py_UCS4 ch = i < n ? (Py_UCS4)p[i] : (Py_UCS4)'.';                                      \
            if (ch != '.' && ch != '!' && ch != '?' && ch != '\n') {                                \
                if (refuse && (ch == 0x130 || ch == 0x3A3))                                         \
                    goto none;                                                                      \
                continue;                                                                           \
            }                                                                                       \
            if (i - start >= minimum) {                                                             \
                unsigned char *o = buf;                                                             \
                int space = 0;                                                                      \
                for (Py_ssize_t j = start; j < i; j++) {                                            \
                    Py_UCS4 c = p[j];                                                               \
                    if (Py_UNICODE_ISSPACE(c)) {                                                    \
                        space = o != buf;                                                           \
                        continue;                                                                   \
                    }                                                                               \
                    if (lower)                                                                      \
                        c = c < 128 ? (c >= 'A' && c <= 'Z' ? c | 0x20 : c) : Py_UNICODE_TOLOWER(c); \
                    if (space) {                                                                    \
                        *o++ = ' ';                                                                 \
                        space = 0;                                                                  \
                    }                                                                               \
                    o = put_utf8(o, c);                                                             \
                }                                                                                   \
                PyObject *value = bytes_hash(buf, (size_t)(o - buf));                               \
                if (value == NULL || PyList_Append(out, value) < 0) {                               \
                    Py_XDECREF(value);                                                              \
                    goto fail;                                                                      \
                }                                                                                   \
                Py_DECREF(value);                                                                   \
            }                                                                                       \
            start = i + 1;                                                                          \
        }                                                                                           \
    } while (0)

static PyObject *native_text_sentence_hashes(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 2 || nargs > 3 || !PyUnicode_Check(args[0]) || !PyLong_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "text_sentence_hashes() takes (str, int[, bool])");
        return NULL;
    }
    Py_ssize_t minimum = PyLong_AsSsize_t(args[1]);
    if (minimum == -1 && PyErr_Occurred())
        return NULL;
    int lower = 0;
    if (nargs == 3) {
        lower = PyObject_IsTrue(args[2]);
        if (lower < 0)
            return NULL;
    }
    PyObject *text = args[0];
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    /* a sentence's normalised UTF-8 is at most 4 bytes per character of it (a lower-cased
       character is one code point too) */
    unsigned char stack[HASH_STACK];
    unsigned char *heap;
    unsigned char *buf = utf8_room(stack, n, &heap);
    if (buf == NULL)
        return NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        PyMem_Free(heap);
        return NULL;
    }
    Py_ssize_t start = 0;
    /* a sentence is lowered character by character: not for a text holding one of the two
       characters whose str.lower() is not that (neither is in a one-byte string) */
    int refuse = lower && kind != PyUnicode_1BYTE_KIND;
    if (kind == PyUnicode_1BYTE_KIND)
        SENTENCE_LOOP(Py_UCS1);
    else if (kind == PyUnicode_2BYTE_KIND)
        SENTENCE_LOOP(Py_UCS2);
    else
        SENTENCE_LOOP(Py_UCS4);
    PyMem_Free(heap);
    return out;
none:
    PyMem_Free(heap);
    Py_DECREF(out);
    Py_RETURN_NONE;
fail:
    PyMem_Free(heap);
    Py_DECREF(out);
    return NULL;
}

PyDoc_STRVAR(ascii_stand_in_doc,
             "ascii_stand_in(text, /)\n--\n\n"
             "indicators._ascii_stand_in_py(text): each non-ASCII character '_' when alphanumeric, else\n"
             "'?'; None when text holds one of U+0130, U+0131, U+017F, U+212A.");

static PyObject *native_ascii_stand_in(PyObject *self, PyObject *arg) {
    if (!PyUnicode_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "ascii_stand_in() takes a str");
        return NULL;
    }
    int kind = PyUnicode_KIND(arg);
    const void *data = PyUnicode_DATA(arg);
    Py_ssize_t n = PyUnicode_GET_LENGTH(arg);
    PyObject *out = PyUnicode_New(n, 127);
    if (out == NULL)
        return NULL;
    Py_UCS1 *o = PyUnicode_1BYTE_DATA(out);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 ch = PyUnicode_READ(kind, data, i);
        if (ch < 128) {
            o[i] = (Py_UCS1)ch;
        } else if (ch == 0x130 || ch == 0x131 || ch == 0x17F || ch == 0x212A) {
            Py_DECREF(out);
            Py_RETURN_NONE;
        } else {
            o[i] = Py_UNICODE_ISALNUM(ch) ? '_' : '?';
        }
    }
    return out;
}

PyDoc_STRVAR(anchor_positions_doc,
             "anchor_positions(text, needles, /)\n--\n\n"
             "ctxhealth.signals.base.anchor_positions_py(text, needles): the positions in text (ascending,\n"
             "each once) where one of needles (a tuple of non-empty ASCII str) starts.");

static PyObject *native_anchor_positions(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyUnicode_Check(args[0]) || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "anchor_positions() takes (str, tuple of str)");
        return NULL;
    }
    PyObject *text = args[0];
    Needles nd;
    if (needles_init(&nd, args[1], "anchor_positions") < 0)
        return NULL;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        needles_free(&nd);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!needles_start_at(&nd, kind, data, n, i))
            continue;
        PyObject *pos = PyLong_FromSsize_t(i);
        int bad = pos == NULL ? -1 : PyList_Append(out, pos);
        Py_XDECREF(pos);
        if (bad < 0) {
            Py_DECREF(out);
            needles_free(&nd);
            return NULL;
        }
    }
    needles_free(&nd);
    return out;
}

/* error_gate(): the substring searches of ctxhealth.failures._error_gate_py, in one screening pass
 * (and a second over the rare text that holds a gate substring) */
#define GATE_ANY 1     /* one of the six gate substrings */
#define GATE_PHRASE 2  /* one of the four literal phrases */
#define GATE_NAMED 4   /* "Error: " or "Exception: " */
#define GATE_OPENING 8 /* "Error", "ERROR" or "error" at the probe's start or after a "\n" */
#define GATE_HEAD 1200 /* the probe of a text longer than 2 * GATE_HEAD: its head + "\n" + its tail */

/* The probe is read as bytes (the text's own for a short 1-byte string, nearly every tool result),
 * sixteen positions at a time with SSE2 where the compiler has it: each needle is screened by three of its bytes (its first and two
 * more, at fixed offsets), and a position that passes a screen is compared in full. GATE_SCREEN
 * (the six gate substrings) answers the common case, none of them, first; GATE_FULL then finds
 * every bit of a text that has one. */
typedef struct {
    const char *text;
    Py_ssize_t len;
    int bits;
} GateNeedle;

static const GateNeedle GATE_SCREEN[] = {
    {"rror", 4, GATE_ANY},
    {"RROR", 4, GATE_ANY},
    {"Exception", 9, GATE_ANY},
    {"Traceback (most recent call last)", 33, GATE_ANY | GATE_PHRASE},
    {"command not found", 17, GATE_ANY | GATE_PHRASE},
    {"No such file or directory", 25, GATE_ANY | GATE_PHRASE},
};
#define GATE_SCREEN_N ((int)(sizeof(GATE_SCREEN) / sizeof(GATE_SCREEN[0])))

static const GateNeedle GATE_FULL[] = {
    {"rror", 4, GATE_ANY},
    {"RROR", 4, GATE_ANY},
    {"Exception", 9, GATE_ANY},
    {"Exception: ", 11, GATE_NAMED},
    {"Error: ", 7, GATE_NAMED},
    {"Traceback (most recent call last)", 33, GATE_ANY | GATE_PHRASE},
    {"command not found", 17, GATE_ANY | GATE_PHRASE},
    {"No such file or directory", 25, GATE_ANY | GATE_PHRASE},
    {"<tool_use_error>", 16, GATE_PHRASE},
    {"\nError", 6, GATE_OPENING},
    {"\nERROR", 6, GATE_OPENING},
    {"\nerror", 6, GATE_OPENING},
};
#define GATE_FULL_N ((int)(sizeof(GATE_FULL) / sizeof(GATE_FULL[0])))
#define GATE_REACH 10 /* the largest screened offset */

static int gate_at(const Py_UCS1 *p, Py_ssize_t j, Py_ssize_t end, const GateNeedle *tab, int count) {
    int bits = 0;
    for (int k = 0; k < count; k++) {
        const GateNeedle *g = &tab[k];
        if (p[j] == (Py_UCS1)g->text[0] && g->len <= end - j && memcmp(p + j, g->text, (size_t)g->len) == 0)
            bits |= g->bits;
    }
    return bits;
}

#if defined(__SSE2__)
#include <emmintrin.h>

/* the positions among the sixteen at q whose bytes pass a needle's screen: its first byte c0 and
 * the bytes c1, c2 at its offsets o1, o2 (a0 .. a10: the sixteen bytes from q, q + 1, ... q + 10) */
#define SCREEN(c0, o1, c1, o2, c2)                                                                      \
    _mm_and_si128(_mm_and_si128(_mm_cmpeq_epi8(a0, _mm_set1_epi8(c0)), _mm_cmpeq_epi8(a##o1, _mm_set1_epi8(c1))), \
                  _mm_cmpeq_epi8(a##o2, _mm_set1_epi8(c2)))
#define LOAD_BLOCK(q)                                                                                   \
    __m128i a0 = _mm_loadu_si128((const __m128i *)(q));                                                 \
    __m128i a1 = _mm_loadu_si128((const __m128i *)((q) + 1));                                           \
    __m128i a2 = _mm_loadu_si128((const __m128i *)((q) + 2));                                           \
    __m128i a3 = _mm_loadu_si128((const __m128i *)((q) + 3));                                           \
    __m128i a8 = _mm_loadu_si128((const __m128i *)((q) + 8));                                           \
    __m128i a10 = _mm_loadu_si128((const __m128i *)((q) + 10))

/* the screens of GATE_SCREEN, in its order */
static inline unsigned screen_block(const Py_UCS1 *q) {
    LOAD_BLOCK(q);
    (void)a2;
    __m128i hit = _mm_or_si128(_mm_or_si128(SCREEN('r', 1, 'r', 2, 'o'), SCREEN('R', 1, 'R', 2, 'O')),
                               _mm_or_si128(SCREEN('E', 1, 'x', 2, 'c'), SCREEN('T', 8, 'k', 10, '(')));
    hit = _mm_or_si128(hit, _mm_or_si128(SCREEN('c', 3, 'm', 8, 'n'), SCREEN('N', 3, 's', 8, 'f')));
    return (unsigned)_mm_movemask_epi8(hit);
}

/* the screens of GATE_FULL, in its order (Exception and Exception: share one) */
static inline unsigned full_block(const Py_UCS1 *q) {
    LOAD_BLOCK(q);
    __m128i hit = _mm_or_si128(_mm_or_si128(SCREEN('r', 1, 'r', 2, 'o'), SCREEN('R', 1, 'R', 2, 'O')),
                               _mm_or_si128(SCREEN('E', 1, 'x', 2, 'c'), SCREEN('E', 1, 'r', 2, 'r')));
    hit = _mm_or_si128(hit, _mm_or_si128(SCREEN('T', 8, 'k', 10, '('), SCREEN('c', 3, 'm', 8, 'n')));
    hit = _mm_or_si128(hit, _mm_or_si128(SCREEN('N', 3, 's', 8, 'f'), SCREEN('<', 1, 't', 10, 'e')));
    hit = _mm_or_si128(hit, _mm_or_si128(SCREEN('\n', 1, 'E', 2, 'r'), SCREEN('\n', 1, 'E', 2, 'R')));
    hit = _mm_or_si128(hit, SCREEN('\n', 1, 'e', 2, 'r'));
    return (unsigned)_mm_movemask_epi8(hit);
}
#undef SCREEN
#undef LOAD_BLOCK
#endif

/* the bits of tab (GATE_SCREEN or GATE_FULL) found in p[start:end]; with first_only, the bits of
 * the first position where one is found */
static int gate_scan_ucs1(const Py_UCS1 *p, Py_ssize_t start, Py_ssize_t end, int full, int first_only) {
    const GateNeedle *tab = full ? GATE_FULL : GATE_SCREEN;
    int count = full ? GATE_FULL_N : GATE_SCREEN_N;
    int bits = 0;
    Py_ssize_t i = start;
#if defined(__SSE2__)
    for (; i + 16 + GATE_REACH <= end; i += 16) {
        unsigned mask = full ? full_block(p + i) : screen_block(p + i);
        while (mask) {
            bits |= gate_at(p, i + __builtin_ctz(mask), end, tab, count);
            if (bits && first_only)
                return bits;
            mask &= mask - 1;
        }
    }
#endif
    for (; i < end; i++) {
        bits |= gate_at(p, i, end, tab, count);
        if (bits && first_only)
            return bits;
    }
    return bits;
}


static int opening_at(const Py_UCS1 *p, Py_ssize_t n) {
    return n >= 5 && (memcmp(p, "Error", 5) == 0 || memcmp(p, "ERROR", 5) == 0 || memcmp(p, "error", 5) == 0);
}

/* the bits of a probe of n bytes (a text, or its head + "\n" + its tail) */
static int gate_probe(const Py_UCS1 *p, Py_ssize_t n) {
    if (!gate_scan_ucs1(p, 0, n, 0, 1))
        return 0;
    int bits = gate_scan_ucs1(p, 0, n, 1, 0);
    if (opening_at(p, n))
        bits |= GATE_OPENING;
    /* a phrase, a name or an opening holds one of the six gate substrings */
    return bits | GATE_ANY;
}

PyDoc_STRVAR(error_gate_doc,
             "error_gate(text, /)\n--\n\n"
             "ctxhealth.failures._error_gate_py(text): which of the error text's substrings the probe of\n"
             "text (all of it, or its head + '\\n' + its tail past 2400 characters) holds, as bits: 1 a gate\n"
             "substring, 2 a literal phrase, 4 'Error: ' or 'Exception: ', 8 an opening at a line start.");

static PyObject *native_error_gate(PyObject *self, PyObject *text) {
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "error_gate() takes a str");
        return NULL;
    }
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (kind == PyUnicode_1BYTE_KIND && n <= 2 * GATE_HEAD)
        return PyLong_FromLong(gate_probe((const Py_UCS1 *)data, n));
    /* the probe as bytes, every character past ASCII as 0x80 (no needle holds one, so the bits are
     * the same); its size is bounded by its definition */
    Py_UCS1 probe[2 * GATE_HEAD + 1];
    if (kind == PyUnicode_1BYTE_KIND) { /* a long one: its head and tail as they are */
        memcpy(probe, data, GATE_HEAD);
        probe[GATE_HEAD] = '\n';
        memcpy(probe + GATE_HEAD + 1, (const Py_UCS1 *)data + n - GATE_HEAD, GATE_HEAD);
        return PyLong_FromLong(gate_probe(probe, 2 * GATE_HEAD + 1));
    }
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (n > 2 * GATE_HEAD && i == GATE_HEAD) {
            probe[m++] = '\n';
            i = n - GATE_HEAD;
        }
        Py_UCS4 ch = PyUnicode_READ(kind, data, i);
        probe[m++] = ch < 128 ? (Py_UCS1)ch : 0x80;
    }
    return PyLong_FromLong(gate_probe(probe, m));
}

/* object_lines(): ctxhealth.sources.claude_code.typed._object_lines_py, the test a whole JSONL file
 * passes before one typed decode reads all of it: it ends with a newline, every line starts with '{'
 * and ends with '}', and it is valid UTF-8 (as Python's strict decoder takes it: no overlong form, no
 * surrogate, nothing past U+10FFFF). The number of lines, or -1. */
static int utf8_valid(const unsigned char *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        /* eight ASCII bytes at a time */
        while (i + 8 <= n) {
            uint64_t word;
            memcpy(&word, s + i, 8);
            if (word & 0x8080808080808080ULL)
                break;
            i += 8;
        }
        if (i >= n)
            break;
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        Py_ssize_t need;
        unsigned char lo = 0x80, hi = 0xBF; /* the range of the second byte */
        if (c >= 0xC2 && c <= 0xDF) {
            need = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            if (c == 0xE0)
                lo = 0xA0;
            else if (c == 0xED)
                hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            if (c == 0xF0)
                lo = 0x90;
            else if (c == 0xF4)
                hi = 0x8F;
        } else {
            return 0;
        }
        if (i + need >= n)
            return 0; /* truncated: the sequence runs past the end */
        if (s[i + 1] < lo || s[i + 1] > hi)
            return 0;
        for (Py_ssize_t k = 2; k <= need; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return 0;
        }
        i += need + 1;
    }
    return 1;
}

PyDoc_STRVAR(object_lines_doc,
             "object_lines(data, /)\n--\n\n"
             "The lines of data (a bytes-like object) when it ends with a newline, every line starts "
             "with '{' and ends with '}' and it is valid UTF-8; else -1.");

static Py_ssize_t object_lines(const unsigned char *s, Py_ssize_t n) {
    if (n == 0 || s[n - 1] != '\n')
        return -1;
    Py_ssize_t lines = 0, start = 0;
    while (start < n) {
        const unsigned char *nl = memchr(s + start, '\n', (size_t)(n - start));
        Py_ssize_t stop = nl - s; /* found: the data ends with one */
        if (s[start] != '{' || s[stop - 1] != '}')
            return -1;
        lines++;
        start = stop + 1;
    }
    return utf8_valid(s, n) ? lines : -1;
}

static PyObject *native_object_lines(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL; /* not bytes-like: the TypeError says so */
    Py_ssize_t lines = object_lines((const unsigned char *)view.buf, view.len);
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(lines);
}

static PyMethodDef methods[] = {
    {"fold", (PyCFunction)native_fold, METH_O, fold_doc},
    {"stems", (PyCFunction)(void (*)(void))native_stems, METH_FASTCALL, stems_doc},
    {"clear_cache", (PyCFunction)native_clear_cache, METH_NOARGS, clear_cache_doc},
    {"whole_runs", (PyCFunction)(void (*)(void))native_whole_runs, METH_FASTCALL, whole_runs_doc},
    {"sentence_hashes", (PyCFunction)native_sentence_hashes, METH_O, sentence_hashes_doc},
    {"any_in", (PyCFunction)(void (*)(void))native_any_in, METH_FASTCALL, any_in_doc},
    {"text_sentence_hashes", (PyCFunction)(void (*)(void))native_text_sentence_hashes, METH_FASTCALL,
     text_sentence_hashes_doc},
    {"ascii_stand_in", (PyCFunction)native_ascii_stand_in, METH_O, ascii_stand_in_doc},
    {"stem_run", (PyCFunction)(void (*)(void))native_stem_run, METH_FASTCALL, stem_run_doc},
    {"last_positions", (PyCFunction)(void (*)(void))native_last_positions, METH_FASTCALL, last_positions_doc},
    {"anchor_positions", (PyCFunction)(void (*)(void))native_anchor_positions, METH_FASTCALL,
     anchor_positions_doc},
    {"spaced_hash", (PyCFunction)(void (*)(void))native_spaced_hash, METH_FASTCALL, spaced_hash_doc},
    {"key_text", (PyCFunction)(void (*)(void))native_key_text, METH_FASTCALL, key_text_doc},
    {"lead_segments", (PyCFunction)(void (*)(void))native_lead_segments, METH_FASTCALL, lead_segments_doc},
    {"adler32", (PyCFunction)native_adler32, METH_O, adler32_doc},
    {"error_gate", (PyCFunction)native_error_gate, METH_O, error_gate_doc},
    {"object_lines", (PyCFunction)native_object_lines, METH_O, object_lines_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "ctxhealth._native",
    "C versions of ctxhealth's text kernels (picked by ctxhealth.native).",
    -1,
    methods,
};

PyMODINIT_FUNC PyInit__native(void) {
    init_run_table();
    init_crc_table();
    if (cache == NULL) {
        cache = PyMem_Calloc(CACHE_LIMIT, sizeof(CacheEntry));
        cache_ix = PyMem_Malloc(CACHE_SLOTS * sizeof(uint16_t));
        if (cache == NULL || cache_ix == NULL) {
            PyMem_Free(cache);
            PyMem_Free(cache_ix);
            cache = NULL;
            cache_ix = NULL;
            return PyErr_NoMemory();
        }
        memset(cache_ix, 0xFF, CACHE_SLOTS * sizeof(uint16_t));
        cache_used = 0;
    }
    return PyModule_Create(&module);
}
