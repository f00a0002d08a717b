/* roctx_utils._fast: the compiled fast path of roctx_utils.annotate (issue 44).
 *
 * The pure-Python annotate costs a Python frame for __enter__ and for __exit__, a thread-local
 * lookup and a ctypes call for each; together about 4x a do-nothing context manager. Here
 * __enter__ and __exit__ are C methods of the annotation's base type that call the library's
 * push and pop through plain function pointers (the addresses ctypes already resolved: nothing
 * is linked, so one build serves every library the package may bind). The pure-Python path
 * stays the fallback (no compiler at install time, ROCTX_UTILS_PYTHON_PURE=1, a free-threaded
 * CPython, another implementation), with the same behaviour; both are tested.
 *
 * Limited API (abi3), CPython 3.9 and later: one build per platform.
 *
 * What an annotation must keep (the pure path's rules, python/src/roctx_utils/__init__.py):
 * - an exit pops only on the thread that entered (roctx ranges are a per-thread stack): each
 *   thread keeps the objects it entered, innermost last; an exit on a thread that never entered
 *   that object is counted (the package's wrong_thread_stops), not popped;
 * - one object may be entered on several threads, and nested on each;
 * - nothing raises into the caller's code.
 *
 * Everything runs with the GIL held (as ctypes' PyDLL calls do): the module's state is only
 * written under it, and the per-thread stacks are the thread's own. */
#define Py_LIMITED_API 0x03090000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <dlfcn.h>
#include <string.h>

#include <structmember.h>

/* The vectorcall convention for our methods: no argument tuple built per call (the `with`
 * statement's __exit__(None, None, None), TraceMe's __init__ and __exit__). CPython has taken
 * it since 3.7; its flag joined the stable ABI in 3.10 with this value, which the 3.9 limited
 * API headers do not define. */
#ifndef METH_FASTCALL
#define METH_FASTCALL 0x0080
#endif

/* roctx_utils_range_push / roctxRangePushA and roctx_utils_range_pop / roctxRangePop. roctx's
 * return an int this never reads: on x86-64 and AArch64 a caller that ignores the return
 * register calls either the same way. */
typedef void (*push_fn)(const char *);
typedef void (*pop_fn)(void);

enum { UNBOUND, BOUND, NO_LIBRARY };
static int g_state = UNBOUND;
static push_fn g_push;
static pop_fn g_pop;
/* Python callables: the binding (returns (push, pop) addresses, or None without a library),
 * and the wrong-thread counter. Set once by setup(). */
static PyObject *g_binder;
static PyObject *g_wrong_thread;

/* Objects a thread entered and has not exited, innermost last. Past DEPTH the entries are only
 * counted (`unchecked`): their exits pop without the identity check. Identities only (borrowed
 * pointers, never dereferenced). */
#define DEPTH 64
typedef struct {
  const void *open[DEPTH];
  unsigned depth;
  size_t unchecked;
} Stack;
static __thread Stack t_stack;

typedef struct {
  PyObject_HEAD
  PyObject *label; /* bytes, or NULL/None: "annotate" */
} Range;

/* First use: asks the package for the library (found lazily, as the pure path does). */
static void bind(void) {
  g_state = NO_LIBRARY;
  if (g_binder == NULL) return;
  PyObject *r = PyObject_CallObject(g_binder, NULL);
  if (r == NULL) {
    PyErr_Clear();
    return;
  }
  unsigned long long push = 0, pop = 0;
  if (r != Py_None && PyArg_ParseTuple(r, "KK", &push, &pop) && push != 0 && pop != 0) {
    g_push = (push_fn)(uintptr_t)push;
    g_pop = (pop_fn)(uintptr_t)pop;
    g_state = BOUND;
  }
  PyErr_Clear();
  Py_DECREF(r);
}

static const char *text_of(PyObject *label) {
  if (label != NULL && label != Py_None && PyBytes_Check(label)) {
    const char *s = PyBytes_AsString(label);
    if (s != NULL) return s;
    PyErr_Clear();
  }
  return "annotate";
}

static PyObject *Range_enter(PyObject *self, PyObject *unused) {
  (void)unused;
  if (g_state == UNBOUND) bind();
  Stack *s = &t_stack;
  if (s->depth < DEPTH && s->unchecked == 0) {
    s->open[s->depth++] = self;
  } else {
    s->unchecked++;
  }
  if (g_state == BOUND) g_push(text_of(((Range *)self)->label));
  Py_INCREF(self);
  return self;
}

/* Removes `self` from this thread's stack: whether it was there. */
static int take(Stack *s, const void *self) {
  if (s->unchecked > 0) { /* deeper than DEPTH: the innermost ones are not named */
    s->unchecked--;
    return 1;
  }
  if (s->depth > 0 && s->open[s->depth - 1] == self) {
    s->depth--;
    return 1;
  }
  /* Not the innermost (a suspended frame resumed after another annotation opened here): the
   * pure path pops the thread's innermost range then too. */
  for (unsigned i = s->depth; i-- > 0;) {
    if (s->open[i] == self) {
      memmove(&s->open[i], &s->open[i + 1], (s->depth - 1 - i) * sizeof(s->open[0]));
      s->depth--;
      return 1;
    }
  }
  return 0;
}

static void wrong_thread(void) {
  if (g_wrong_thread == NULL) return;
  PyObject *r = PyObject_CallObject(g_wrong_thread, NULL);
  if (r == NULL) PyErr_Clear();
  Py_XDECREF(r);
}

static PyObject *Range_exit(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)args;
  (void)nargs;
  if (take(&t_stack, self)) {
    if (g_state == BOUND) g_pop();
  } else {
    wrong_thread(); /* exited on a thread that never entered it */
  }
  Py_INCREF(Py_False);
  return Py_False;
}

static void Range_dealloc(PyObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  Py_CLEAR(((Range *)self)->label);
  freefunc free_fn = (freefunc)PyType_GetSlot(tp, Py_tp_free);
  free_fn(self);
  Py_DECREF(tp);
}

static PyMethodDef Range_methods[] = {
    {"__enter__", Range_enter, METH_NOARGS, "Pushes the range on this thread; returns self."},
    {"__exit__", (PyCFunction)(void (*)(void))Range_exit, METH_FASTCALL, "Pops it, on the thread that pushed it; returns False."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef Range_members[] = {
    {"_label", T_OBJECT, offsetof(Range, label), 0, "The label pushed (bytes; None: 'annotate')."},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot Range_slots[] = {
    {Py_tp_doc, "A ROCTX range as a context manager: the base of roctx_utils.annotate."},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_dealloc, Range_dealloc},
    {Py_tp_methods, Range_methods},
    {Py_tp_members, Range_members},
    {0, NULL},
};

static PyType_Spec Range_spec = {
    "roctx_utils._fast.Range", sizeof(Range), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, Range_slots,
};

/* setup(binder, wrong_thread) */
static PyObject *setup(PyObject *module, PyObject *args) {
  (void)module;
  PyObject *binder, *wrong;
  if (!PyArg_ParseTuple(args, "OO", &binder, &wrong)) return NULL;
  PyObject *old_binder = g_binder, *old_wrong = g_wrong_thread;
  Py_INCREF(binder);
  Py_INCREF(wrong);
  g_binder = binder;
  g_wrong_thread = wrong;
  Py_XDECREF(old_binder);
  Py_XDECREF(old_wrong);
  g_state = UNBOUND;
  Py_RETURN_NONE;
}

/* push(label) -> the thread's ident: a range a caller pops with pop(ident) (jax's hooked
 * TraceAnnotation, which opens its range in __init__). */
static PyObject *push(PyObject *module, PyObject *label) {
  (void)module;
  if (g_state == UNBOUND) bind();
  if (g_state == BOUND) g_push(text_of(label));
  return PyLong_FromUnsignedLong(PyThread_get_thread_ident());
}

/* pop(ident) -> whether it popped: only on the thread `ident` names. */
static PyObject *pop(PyObject *module, PyObject *ident) {
  (void)module;
  unsigned long want = PyLong_AsUnsignedLong(ident);
  if (want == (unsigned long)-1 && PyErr_Occurred()) {
    PyErr_Clear();
    Py_RETURN_FALSE;
  }
  if (want != PyThread_get_thread_ident()) Py_RETURN_FALSE;
  if (g_state == BOUND) g_pop();
  Py_RETURN_TRUE;
}

/* ---- jax.profiler.TraceAnnotation's hooks (roctx_utils.jax): C methods installed on the class
 * with PyDescr_NewMethod, so that neither __init__, __exit__ nor __del__ adds a Python frame.
 * One class is hooked per process (TraceAnnotation; StepTraceAnnotation and annotate_function
 * reach it through it), so its originals live here. The range opens in __init__ (as TraceMe
 * starts there) and closes at the first of __exit__ and __del__, on the thread that opened it.
 * Which instances have a range open, and on which thread, is kept here (g_open), not on the
 * instance as the pure path does (`_roctx_utils_tid`): the attribute's int, its dict, and
 * reading `__dict__` back at each exit and again at each __del__ (which builds the instance's
 * dict object) were most of what the hook cost over a stock TraceAnnotation (issue 44). */
static PyObject *g_base_init, *g_base_exit, *g_base_del; /* the class's own (base_del may be None) */
static PyObject *g_plain;                                  /* jax.py's _PLAIN: name -> label */
static PyObject *g_label;                                  /* jax.py's label(name, kwargs) */

/* Instances with a range open: address -> the ident of the thread that pushed it. Open
 * addressing with linear probing and backward-shift deletion, at most half full; written only
 * with the GIL held. An entry leaves at the instance's first __exit__ or its __del__, so an
 * address is never found again after its object is gone. */
typedef struct {
  const void *key; /* NULL: empty */
  unsigned long tid;
} Open;
static Open *g_open;
static size_t g_open_cap; /* 0 or a power of two */
static size_t g_open_n;

static size_t open_slot(const void *key, size_t cap) {
  uint64_t h = (uint64_t)(uintptr_t)key * 0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 32) & (cap - 1);
}

/* Whether `key` was added (no memory: not). */
static int open_put(const void *key, unsigned long tid) {
  if ((g_open_n + 1) * 2 > g_open_cap) {
    size_t cap = g_open_cap ? g_open_cap * 2 : 64;
    Open *table = PyMem_Calloc(cap, sizeof(Open));
    if (table == NULL) return 0;
    for (size_t i = 0; i < g_open_cap; ++i) {
      if (g_open[i].key == NULL) continue;
      size_t j = open_slot(g_open[i].key, cap);
      while (table[j].key != NULL) j = (j + 1) & (cap - 1);
      table[j] = g_open[i];
    }
    PyMem_Free(g_open);
    g_open = table;
    g_open_cap = cap;
  }
  size_t i = open_slot(key, g_open_cap);
  while (g_open[i].key != NULL && g_open[i].key != key) i = (i + 1) & (g_open_cap - 1);
  if (g_open[i].key == NULL) g_open_n++;
  g_open[i].key = key;
  g_open[i].tid = tid;
  return 1;
}

/* Removes `key`: whether it was there, and its thread in *tid. */
static int open_take(const void *key, unsigned long *tid) {
  if (g_open_n == 0) return 0;
  size_t mask = g_open_cap - 1, i = open_slot(key, g_open_cap);
  while (g_open[i].key != key) {
    if (g_open[i].key == NULL) return 0;
    i = (i + 1) & mask;
  }
  *tid = g_open[i].tid;
  /* Backward shift: every later entry of the run that may sit at i moves up, so no probe
   * meets a hole before its key. */
  for (size_t j = (i + 1) & mask; g_open[j].key != NULL; j = (j + 1) & mask) {
    size_t home = open_slot(g_open[j].key, g_open_cap);
    if (((j - home) & mask) >= ((j - i) & mask)) {
      g_open[i] = g_open[j];
      i = j;
    }
  }
  g_open[i].key = NULL;
  g_open_n--;
  return 1;
}

/* PyObject_Vectorcall where the interpreter exports it (3.11 does; the stable ABI has it from
 * 3.12), looked up once at import: TraceMe's methods are then called with no argument tuple.
 * NULL: the tuple call below. */
typedef PyObject *(*vectorcall_fn)(PyObject *, PyObject *const *, size_t, PyObject *);
static vectorcall_fn g_vectorcall;

static vectorcall_fn find_vectorcall(void) { return (vectorcall_fn)dlsym(RTLD_DEFAULT, "PyObject_Vectorcall"); }

/* Arguments (self first) passed without a tuple: more take the tuple call. */
#define STACK_ARGS 8

/* base(self, *args[0:nargs], **dict(zip(kwnames, args[nargs:]))): TraceMe's own method. */
static PyObject *call_base(PyObject *base, PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);

/* (self,) + args[0:n]: the tuple TraceMe's methods are called with. */
static PyObject *with_self(PyObject *self, PyObject *const *args, Py_ssize_t n) {
  PyObject *all = PyTuple_New(n + 1);
  if (all == NULL) return NULL;
  Py_INCREF(self);
  PyTuple_SetItem(all, 0, self);
  for (Py_ssize_t i = 0; i < n; ++i) {
    Py_INCREF(args[i]);
    PyTuple_SetItem(all, i + 1, args[i]);
  }
  return all;
}

/* The keyword arguments of a vectorcall as a dict (NULL with none, or on error with an
 * exception set: *failed). */
static PyObject *kwargs_of(PyObject *const *values, PyObject *kwnames, int *failed) {
  *failed = 0;
  Py_ssize_t n = kwnames != NULL ? PyTuple_Size(kwnames) : 0;
  if (n <= 0) return NULL;
  PyObject *kw = PyDict_New();
  for (Py_ssize_t i = 0; kw != NULL && i < n; ++i) {
    if (PyDict_SetItem(kw, PyTuple_GetItem(kwnames, i), values[i]) < 0) Py_CLEAR(kw);
  }
  *failed = kw == NULL;
  return kw;
}

static PyObject *call_base(PyObject *base, PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  Py_ssize_t nkw = kwnames != NULL ? PyTuple_Size(kwnames) : 0;
  if (nkw < 0) return NULL;
  if (g_vectorcall != NULL && 1 + nargs + nkw <= STACK_ARGS) {
    PyObject *stack[STACK_ARGS];
    stack[0] = self;
    for (Py_ssize_t i = 0; i < nargs + nkw; ++i) stack[1 + i] = args[i];
    return g_vectorcall(base, stack, (size_t)(1 + nargs), nkw > 0 ? kwnames : NULL);
  }
  int failed;
  PyObject *kwargs = kwargs_of(args + nargs, kwnames, &failed);
  if (failed) return NULL;
  PyObject *all = with_self(self, args, nargs);
  PyObject *r = all != NULL ? PyObject_Call(base, all, kwargs) : NULL;
  Py_XDECREF(all);
  Py_XDECREF(kwargs);
  return r;
}

static PyObject *hook_init(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  PyObject *r = call_base(g_base_init, self, args, nargs, kwnames);
  if (r == NULL) return NULL; /* TraceMe's own error, unchanged */
  Py_DECREF(r);
  int failed;
  PyObject *kwargs = kwargs_of(args + nargs, kwnames, &failed); /* the label's, rare */
  if (failed) PyErr_Clear();
  /* The label: a plain name's is cached by label(); anything else goes through it. Never
   * raises: a label that cannot be made is label()'s "<unprintable annotation name>". TraceMe
   * takes its name positionally only (it raised above otherwise). */
  PyObject *name = nargs > 0 ? args[0] : NULL;
  int plain = kwargs == NULL;
  PyObject *label = NULL;
  if (name != NULL && plain && PyUnicode_Check(name) && g_plain != NULL) {
    label = PyDict_GetItem(g_plain, name); /* borrowed; no exception */
    Py_XINCREF(label);
  }
  if (label == NULL && name != NULL && g_label != NULL) {
    PyObject *kw = kwargs != NULL ? kwargs : PyDict_New(); /* label() takes a dict */
    if (kw != NULL) label = PyObject_CallFunctionObjArgs(g_label, name, kw, NULL);
    if (kw != kwargs) Py_XDECREF(kw);
    if (label == NULL) PyErr_Clear();
  }
  Py_XDECREF(kwargs);
  if (g_state == UNBOUND) bind();
  if (g_state == BOUND) g_push(text_of(label));
  Py_XDECREF(label);
  if (!open_put(self, PyThread_get_thread_ident())) {
    /* Pushed but not remembered (no memory): pop now rather than never. */
    PyErr_Clear();
    if (g_state == BOUND) g_pop();
  }
  Py_RETURN_NONE;
}

/* Pops `self`'s range once, on the thread that opened it (else counted). */
static void hook_stop(PyObject *self) {
  unsigned long tid;
  if (!open_take(self, &tid)) return; /* never pushed, or already popped */
  if (tid != PyThread_get_thread_ident()) {
    wrong_thread();
    return;
  }
  if (g_state == BOUND) g_pop();
}

static PyObject *hook_exit(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  PyObject *r = call_base(g_base_exit, self, args, nargs, NULL);
  /* Popped whatever TraceMe's exit did; its result or exception passes through unchanged. */
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  hook_stop(self);
  PyErr_Restore(type, value, traceback);
  return r;
}

static PyObject *hook_del(PyObject *self, PyObject *unused) {
  (void)unused;
  hook_stop(self);
  if (g_base_del != NULL && g_base_del != Py_None) {
    PyObject *r = PyObject_CallFunctionObjArgs(g_base_del, self, NULL);
    if (r == NULL) return NULL;
    Py_DECREF(r);
  }
  Py_RETURN_NONE;
}

static PyMethodDef hook_defs[] = {
    {"__init__", (PyCFunction)(void (*)(void))hook_init, METH_FASTCALL | METH_KEYWORDS,
     "TraceMe's __init__, then a ROCTX range pushed on this thread (roctx_utils.jax)."},
    {"__exit__", (PyCFunction)(void (*)(void))hook_exit, METH_FASTCALL, "TraceMe's __exit__, then the range popped once (roctx_utils.jax)."},
    {"__del__", hook_del, METH_NOARGS, "The range popped if still open (roctx_utils.jax)."},
};

/* hook_trace_annotation(cls, base_init, base_exit, base_del, plain, label)
 *   -> (__init__, __exit__, __del__): method descriptors of cls to set on it. */
static PyObject *hook_trace_annotation(PyObject *module, PyObject *args) {
  (void)module;
  PyObject *cls, *init, *exit_, *del, *plain, *label;
  if (!PyArg_ParseTuple(args, "OOOOOO", &cls, &init, &exit_, &del, &plain, &label)) return NULL;
  if (!PyType_Check(cls)) {
    PyErr_SetString(PyExc_TypeError, "hook_trace_annotation: cls must be a class");
    return NULL;
  }
  PyObject *out = PyTuple_New(3);
  if (out == NULL) return NULL;
  for (int i = 0; i < 3; ++i) {
    PyObject *d = PyDescr_NewMethod((PyTypeObject *)cls, &hook_defs[i]);
    if (d == NULL) {
      Py_DECREF(out);
      return NULL;
    }
    PyTuple_SetItem(out, i, d);
  }
  PyObject *keep[] = {init, exit_, del, plain, label};
  PyObject **slots[] = {&g_base_init, &g_base_exit, &g_base_del, &g_plain, &g_label};
  for (int i = 0; i < 5; ++i) {
    PyObject *old = *slots[i];
    Py_INCREF(keep[i]);
    *slots[i] = keep[i];
    Py_XDECREF(old);
  }
  return out;
}

/* _table_check(n): the open-instance table under n keys spaced as objects are, inserted and
 * taken in a scrambled order with every remaining key looked up after each take; whether all
 * held (the tests'; the table is left as it was: empty keys only ever here). */
static PyObject *table_check(PyObject *module, PyObject *arg) {
  (void)module;
  long n = PyLong_AsLong(arg);
  if (n < 0 || n > 4096) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "_table_check: 0 <= n <= 4096");
    return NULL;
  }
  /* Fake addresses past any object's, 48 bytes apart (small objects' spacing). */
  const uintptr_t base = (uintptr_t)1 << 62;
  size_t before = g_open_n;
  int ok = 1;
  for (long i = 0; i < n; ++i) ok &= open_put((const void *)(base + 48 * (uintptr_t)i), (unsigned long)i);
  /* Taken in the order i * 7919 mod n (a permutation when n is not a multiple of 7919). */
  for (long k = 0; ok && k < n; ++k) {
    long i = (long)(((uint64_t)k * 7919u) % (uint64_t)n);
    unsigned long tid = 0;
    ok &= open_take((const void *)(base + 48 * (uintptr_t)i), &tid) && tid == (unsigned long)i;
    ok &= !open_take((const void *)(base + 48 * (uintptr_t)i), &tid); /* once */
    if (k % 64 == 0 || n <= 256) {
      for (long m = k + 1; ok && m < n; ++m) {
        long j = (long)(((uint64_t)m * 7919u) % (uint64_t)n);
        const void *key = (const void *)(base + 48 * (uintptr_t)j);
        size_t mask = g_open_cap - 1, at = open_slot(key, g_open_cap);
        while (g_open[at].key != key && g_open[at].key != NULL) at = (at + 1) & mask;
        ok &= g_open[at].key == key;
      }
    }
  }
  ok &= g_open_n == before;
  return PyBool_FromLong(ok);
}

/* _vectorcall(on) -> whether it was on: TraceMe's methods called without tuples where the
 * interpreter allows (on), or always by the tuple call (the tests run both). */
static PyObject *set_vectorcall(PyObject *module, PyObject *arg) {
  (void)module;
  int was = g_vectorcall != NULL, on = PyObject_IsTrue(arg);
  if (on < 0) return NULL;
  g_vectorcall = on ? find_vectorcall() : NULL;
  return PyBool_FromLong(was);
}

static PyMethodDef module_methods[] = {
    {"setup", setup, METH_VARARGS, "setup(binder, wrong_thread): the package's two callbacks."},
    {"push", push, METH_O, "push(label) -> ident: pushes label (bytes) on this thread."},
    {"pop", pop, METH_O, "pop(ident) -> bool: pops, only on the thread ident names."},
    {"_vectorcall", set_vectorcall, METH_O, "_vectorcall(on) -> bool: TraceMe's methods called by vectorcall where possible (tests)."},
    {"_table_check", table_check, METH_O, "_table_check(n) -> bool: the open-instance table's self-check (tests)."},
    {"hook_trace_annotation", hook_trace_annotation, METH_VARARGS,
     "hook_trace_annotation(cls, init, exit, del, plain, label) -> (__init__, __exit__, __del__)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "roctx_utils._fast", "The compiled fast path of roctx_utils.annotate.", -1, module_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fast(void) {
  PyObject *m = PyModule_Create(&module_def);
  if (m == NULL) return NULL;
  g_vectorcall = find_vectorcall();
  PyObject *range = PyType_FromSpec(&Range_spec);
  if (range == NULL || PyModule_AddObject(m, "Range", range) < 0) {
    Py_XDECREF(range);
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
