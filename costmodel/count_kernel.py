"""The access counts of costmodel.analysis, compiled (numba) and taken one mapping at a time.

Why compiled: per mapping the closed forms are a few hundred integer operations over small
[level, dim] tables. As numpy passes over the whole batch they cost about 3 µs per mapping (each
pass streams temporaries through memory); a compiled loop keeps one mapping's tables in L1 cache.

The window statistics that need an enumeration (the sum-set size of a window axis over some
digits, and the stability row of merged children, see docs/semantics.md) are memoized per counting
plan in an open-addressing hash table keyed by the exact digit pattern. Keys are compared in full,
so a hash collision costs a probe, never a wrong count. When a table is full the kernel stops
before the mapping that needs room and returns its index; the caller grows the tables and resumes.
"""

from __future__ import annotations

import threading

import numpy as np
from numba import njit
from numba.core import config as numba_config

from costmodel.prefetch import prefetch_rows

SUMSET, MERGED = 1, 2  # the first word of a memo key


# odd multipliers for the hash: a sum of products has no chain of dependent steps, unlike a
# byte-wise mix (keys are compared in full, so its quality only sets the number of probes)
# (as many as the longest key: 3 + terms x (2 + 2 x slots) words, checked in costmodel.analysis._Plan)
_MULT = np.random.default_rng(20261204).integers(1, 2**62, size=1024, dtype=np.int64) | 1


@njit(cache=True, inline='always')
def _hash(key, n):
    h = np.int64(n)
    for i in range(n):
        h += key[i] * _MULT[i]
    h ^= (h >> 29) & 0x7FFFFFFFF
    h *= np.int64(-4658895280553007687)  # 0xBF58476D1CE4E5B9
    h ^= (h >> 32) & 0xFFFFFFFF
    return h & 0x3FFFFFFFFFFFFFFF


@njit(cache=True, inline='always')
def _find(slots, keys, key, n, h):
    """Slot of ``key`` (slots [cap, 3]: hash, key offset or -1, entry), or -(free slot) - 1."""
    mask = slots.shape[0] - 1
    i = h & mask
    while True:
        off = slots[i, 1]
        if off < 0:
            return -i - 1
        if slots[i, 0] == h and keys[off] == n:
            j = 0
            while j < n and keys[off + 1 + j] == key[j]:
                j += 1
            if j == n:
                return i
        i = (i + 1) & mask


@njit(cache=True)
def rehash(slots, cap):
    """The table's entries in a table of ``cap`` slots (a power of two)."""
    out = np.full((cap, 3), -1, np.int64)
    mask = cap - 1
    for i in range(slots.shape[0]):
        if slots[i, 1] >= 0:
            j = slots[i, 0] & mask
            while out[j, 1] >= 0:
                j = (j + 1) & mask
            out[j] = slots[i]
    return out


@njit(cache=True)
def _digit_values(key, p, nd, coef):
    """coef x the values of the mixed-radix number whose (w, f) digit pairs start at key[p]."""
    n = 1
    for i in range(nd):
        n *= key[p + 2 * i + 1]
    vals = np.zeros(n, np.int64)
    cur = 1
    for i in range(nd):
        w, f = key[p + 2 * i], key[p + 2 * i + 1]
        for a in range(1, f):
            for j in range(cur):
                vals[a * cur + j] = vals[j] + a * w * coef
        cur *= f
    return vals


@njit(cache=True)
def sumset(a, b):
    """Sorted distinct values of {x + y : x in a, y in b} (a, b non-negative)."""
    have = np.zeros(a.max() + b.max() + 1, np.bool_)
    for x in a:
        for y in b:
            have[x + y] = True
    return np.nonzero(have)[0].astype(np.int64)


@njit(cache=True)
def _sumset_size(key, n_terms, coefs):
    """|{Σ c_m v_m}| for the key [SUMSET, t, k, then per term: 0, #digits, (w, f) pairs]."""
    vals = np.zeros(1, np.int64)
    p = 3
    for m in range(n_terms):
        nd = key[p + 1]
        vals = sumset(vals, _digit_values(key, p + 2, nd, coefs[m]))
        p += 2 + 2 * nd
    return vals.shape[0]


@njit(cache=True)
def _merged_row(key, n_terms, coefs, span, row):
    """For the key [MERGED, t, k, then per term: tile extent, #digits, (w, f) pairs]: |U| of the
    children tiles X + o (o in the offsets O), and into ``row`` [2 span + 1] the stability row:
    per shift Δ the elements of U that every child covering them already held before the tiles
    moved by Δ (docs/semantics.md, by enumeration)."""
    x = np.zeros(1, np.int64)
    o = np.zeros(1, np.int64)
    p = 3
    for m in range(n_terms):
        n, nd, c = key[p], key[p + 1], coefs[m]
        x = sumset(x, np.arange(n) * c)
        o = sumset(o, _digit_values(key, p + 2, nd, c))
        p += 2 + 2 * nd
    reach = x[-1]
    top = reach + o[-1] + 1
    base = top + reach
    inx = np.zeros(2 * top + 2 * reach + 1, np.bool_)  # inx[i + base] = (i in X)
    for v in x:
        inx[v + base] = True
    row[:] = 0
    # per element v of U, the children covering it hold v - oi (in X); a shift keeps v iff each of
    # those stays in X, so the first one's element alone names the candidates: Δ in X - (v - oi)
    # (|X| candidates, not all 2 reach + 1 shifts: a stride-50,000 window took seconds per entry)
    u = sumset(x, o)
    held = np.empty(o.shape[0], np.int64)
    for v in u:
        n_held = 0
        for oi in o:
            if inx[v - oi + base]:
                held[n_held] = v - oi
                n_held += 1
        for xv in x:
            dlt = xv - held[0]
            ok = True
            for i in range(1, n_held):
                if not inx[held[i] + dlt + base]:
                    ok = False
                    break
            if ok:
                row[span + dlt] += 1
    return u.shape[0]


@njit(cache=True, inline='always')
def _memo(key, n, n_terms, coefs, span, slots, keys, ent, rows, used):
    """Entry index of ``key`` (computed and stored on a miss), or -1 when a table is full. (Inlined:
    nearly every lookup hits, and a call passes each array as several words.)"""
    h = _hash(key, n)
    at = _find(slots, keys, key, n, h)
    if at >= 0:
        return slots[at, 2]
    return _insert(key, n, h, -at - 1, n_terms, coefs, span, slots, keys, ent, rows, used)


@njit(cache=True)
def _insert(key, n, h, i, n_terms, coefs, span, slots, keys, ent, rows, used):
    """Computes ``key``'s entry and stores it at free slot i; -1 when a table is full, with the key
    and row words that would have been needed in ``used[3:5]`` (the most of a mapping's misses)."""
    width = 2 * span + 1 if key[0] == MERGED else 0
    if (2 * (used[0] + 1) > slots.shape[0] or used[0] >= ent.shape[0]
            or used[1] + n + 1 > keys.shape[0] or used[2] + width > rows.shape[0]):
        used[3] = max(used[3], used[1] + n + 1)
        used[4] = max(used[4], used[2] + width)
        return -1
    e = used[0]
    if key[0] == MERGED:
        ent[e, 0] = _merged_row(key, n_terms, coefs, span, rows[used[2]:used[2] + width])
        ent[e, 1] = used[2]
    else:
        ent[e, 0] = _sumset_size(key, n_terms, coefs)
    keys[used[1]] = n
    keys[used[1] + 1:used[1] + 1 + n] = key[:n]
    slots[i, 0], slots[i, 1], slots[i, 2] = h, used[1], e
    used[0] += 1
    used[1] += n + 1
    used[2] += width
    return e


@njit(cache=True, inline='always')
def _put_term(key, p, lead, f, suf, e, lo, hi, mask, c, all_digits):
    """One term of a memo key at key[p]: ``lead``, the number of digits, then the (place value,
    factor) of each digit of dim ``e`` among slots lo..hi-1 whose factor is above 1: the spatial
    digits of the networks in ``mask``, or with ``all_digits`` every digit but the spatial ones
    of levels above ``c`` outside ``mask``. Returns the position after it."""
    key[p] = lead
    nd = 0
    for m in range(lo // 3, hi // 3):
        merged = (mask >> m) & 1 != 0
        if not (all_digits or merged):
            continue
        for s in range(3 * m, 3 * m + 3):
            kind = s - 3 * m
            chosen = (kind == 0 or m >= c or merged) if all_digits else kind != 0
            if chosen and f[s, e] > 1:
                key[p + 2 + 2 * nd] = suf[s + 1, e]
                key[p + 3 + 2 * nd] = f[s, e]
                nd += 1
    key[p + 1] = nd
    return p + 2 + 2 * nd


@njit(cache=True, inline='always')
def _merge_factors(mask, lo, hi, xy, excl_used, tdims, ti, mf):
    """Into ``mf[mask]`` [D]: the product of the spatial factors of the networks in ``mask`` (bits of
    levels lo..hi-1), per dim; Timeloop's model (``excl_used``) merges only the dims tensor ``ti``
    does not use. Returns their product (merged children per group) and whether they split a
    window dim of the tensor."""
    pm, split = 1, False
    for d in range(tdims.shape[2]):  # the active dims (mf holds 1 past them)
        v = 1
        if not (excl_used and tdims[ti, 2, d]):
            for m in range(lo, hi):
                if (mask >> m) & 1:
                    v *= xy[m, d]
        mf[mask, d] = v
        pm *= v
        split = split or (tdims[ti, 3, d] != 0 and v > 1)
    return pm, split


@njit(cache=True, inline='always')
def progression_sum_size(n0, w0, n1, w1):
    """|{x w0 + y w1 : 0 <= x < n0, 0 <= y < n1}| (steps w0, w1 >= 1). With g = gcd(w0, w1),
    w0 = g a, w1 = g b: two pairs give one sum exactly when they differ by a multiple of
    (b, -a), so the sums number n0 n1 less the pairs (x, y) from which (x - b, y + a) is a pair
    too: n0 n1 - max(0, n0 - b) max(0, n1 - a)."""
    if n0 == 1 or n1 == 1:
        return n0 * n1
    g, r = w0, w1
    while r:
        g, r = r, g % r
    return n0 * n1 - max(0, n0 - w1 // g) * max(0, n1 - w0 // g)


@njit(cache=True, inline='always')
def _one_level_halo(ti, k, ax_n, ax_dim, ax_coef, suf, xy, mask):
    """|U| of window axis k (one or two terms) at the MACs when one level (the bit of ``mask``)
    merges: the size the MERGED memo entry would hold, in closed form. The tile is one element,
    so U is the set of the merged children's offsets; a term's spatial digits at one level form
    one progression (the X slot's place value is the Y slot's times its factor), of fx x fy
    steps of c x the place value below the level. (On a 3x3 conv on tpu_like this took 12 % off
    the kernel's time: a memo lookup per axis for nearly every mapping.)"""
    m = 0
    while mask > 1:
        mask >>= 1
        m += 1
    e0 = ax_dim[ti, k, 0]
    n0, w0 = xy[m, e0], ax_coef[ti, k, 0] * suf[3 * m + 3, e0]
    if ax_n[ti, k] == 1:
        return n0
    e1 = ax_dim[ti, k, 1]
    return progression_sum_size(n0, w0, xy[m, e1], ax_coef[ti, k, 1] * suf[3 * m + 3, e1])


@njit(cache=True, inline='always')
def _deposit(o, j0, ti, c, x, parent, mac, dn, er):
    """Step x of a link's walk up from level c into the block's counts ``o[:, j0]``: ``dn`` (down
    the multicast networks) and ``er`` (up the reduction ones) are the fills of c at x = c, the
    reads and updates of the parent at x = parent, and the hops of level x - 1 on the way."""
    if x == c and not mac:
        o[0, j0, c, ti] += dn
    if x == parent:
        o[1, j0, x, ti] += dn
        o[2, j0, x, ti] += er
    else:
        o[3, j0, x - 1, ti] += dn + er


@njit(cache=True, inline='always')
def _windowless(ti, is_out, n_lv, kp, flags, tinfo, tdims, f, lp, xy, suf, tabove, n_above, sp_above,
                o, j0, d_n, d_real):
    """The counts of tensor ``ti``, which has no window axis, into ``o[:, j0]``: the general link
    walk of :func:`count` reduced to the classic reuse formula (docs/semantics.md, "Closed
    forms", single-term axis).

    Why apart: such a tensor's dims are all single-term, so every loop inner to its tile's last
    stationary loop moves nothing and reuses the whole tile; the steps at which those loops
    advance telescope to (steps above c) - (steps up to that loop), and per merge set

        entries = instances above c / merged factors outside the tensor's dims
                  x tile words x steps up to the last stationary loop (every step at the MACs)

    less, for outputs, the elements each merged group ever holds. No reusing-loop list, shift,
    window table or memo: the whole kernel took 9-14 % less time on a 3x3 conv, whose weights
    and outputs take this path. (The merged factors are taken per link step, not tabled per
    tensor: the table cost 10 % in LLVM's code for the kernel.)"""
    st_n = tinfo[ti, 2]
    ml, mx, parent = -1, -1, 0  # the level of the last nontrivial stationary loop above c, its position
    for c in range(1, n_lv + 1):
        mac = c == n_lv
        m = c - 1
        mm = -1
        for i in range(st_n):
            v = lp[m, tdims[ti, 0, i]]
            mm = v if v > mm else mm  # noqa: FURB136 (the measured code: numba's max is a call)
        ml, mx = (m, mm) if mm >= 0 else (ml, mx)
        if not mac and not kp[c]:
            o[4, j0, c, ti] = 0
            continue
        upto = 1
        if ml >= 0 and not mac:  # (the MACs take every step above)
            upto = n_above[ml]
            for d in range(d_n):
                upto *= f[3 * ml, d] if lp[ml, d] <= mx else 1
        sg, ds = 1, 1
        for i in range(st_n):
            e = tdims[ti, 0, i]
            sg *= suf[3 * c, e]
            ds *= tabove[c, e] * suf[3 * c, e]
        if not mac:
            o[4, j0, c, ti] = sg
        base = n_above[c] if mac else upto
        q0, q1, dn, er = 1, 1, 0, 0
        for x in range(c, parent - 1, -1):
            merges = x < c and (flags[0, x] or flags[1, x])
            if merges:
                # the merged spatial factors of level x outside the tensor's dims (its used dims
                # are its single-term dims, which both models leave unmerged in these counts)
                v = 1
                for d in range(d_real):
                    v *= 1 if tdims[ti, 2, d] else xy[x, d]
                q0 *= v if flags[0, x] else 1
                q1 *= v if flags[1, x] else 1
            if x == c or merges:
                dn = sp_above[c] // q0 * (sg * base - (ds if is_out else 0))
                er = sp_above[c] // q1 * sg * base if is_out else 0
            _deposit(o, j0, ti, c, x, parent, mac, dn, er)
        parent = c


@njit(cache=True, inline='always')
def _tab_row(ti, k, suf, s, ax_n, ax_dim, lk, lk_off, radix):
    r = 0
    for term in range(ax_n[ti, k]):
        e = ax_dim[ti, k, term]
        r = r * radix[ti, k, term] + lk[lk_off[ti, k, term] + suf[s, e]]
    return r


@njit(cache=True, inline='always')
def _tile(ti, ext, r, c, tinfo, tdims, ax_n, ax_dim, tsize, tsize_off, lk, lk_off, radix, trow):
    """Tensor ``ti``'s tile whose dims span ``ext[r]``: the product of its window axes' sizes and
    that of its single-term dims' extents (the tile's words are their product). Each window
    axis's table row goes to ``trow[k, c]``."""
    mu = 1
    for k in range(tinfo[ti, 4]):
        trow[k, c] = _tab_row(ti, k, ext, r, ax_n, ax_dim, lk, lk_off, radix)
        mu *= tsize[tsize_off[ti, k] + trow[k, c]]
    sg = 1
    for i in range(tinfo[ti, 2]):
        sg *= ext[r, tdims[ti, 0, i]]
    return mu, sg


@njit(cache=True)
def tile_words(tem, spx, spy, idx, tinfo, tdims, ax_n, ax_dim, tsize, tsize_off, lk, lk_off, radix, out):
    """Into ``out`` [L, T, B]: words of each tensor's tile at each level (level 0: the whole
    tensor), kept or not (the packed arrays of costmodel.tiles.PackedTables)."""
    b_n, n_lv, _ = tem.shape
    n_t, d_n = tinfo.shape[0], idx.shape[0]
    ext = np.ones((n_lv, d_n), np.int64)  # ext[c]: each dim's extent in a tile at level c
    trow = np.zeros((ax_n.shape[1], n_lv), np.int64)
    for b in range(b_n):
        for d in range(d_n):
            di, e = idx[d], 1
            for m in range(n_lv - 1, 0, -1):
                e *= tem[b, m, di] * spx[b, m, di] * spy[b, m, di]
                ext[m, d] = e
        for ti in range(n_t):
            out[0, ti, b] = tinfo[ti, 1]
            for c in range(1, n_lv):
                mu, sg = _tile(ti, ext, c, c, tinfo, tdims, ax_n, ax_dim, tsize, tsize_off, lk, lk_off, radix, trow)
                out[c, ti, b] = mu * sg


@njit(cache=True)
def _flush(o, nb, b0, fills, reads, updates, hops, words):
    """The first ``nb`` mappings of the block buffer into the [L, T, B] outputs from ``b0``."""
    for i, out in enumerate((fills, reads, updates, hops, words)):
        for m in range(out.shape[0]):
            for t in range(out.shape[1]):
                for j in range(nb):
                    out[m, t, b0 + j] = o[i, j, m, t]


# error_model "numpy": no zero-division checks (every divisor is a product of factors >= 1)
@njit(cache=True, error_model="numpy")
def count(tem, spx, spy, rank, keep, timeloop,
          idx, flags, tinfo, tdims, ax_n, ax_coef, ax_dim, ax_span,
          tsize, tsize_off, tover, tover_off, lk, lk_off, radix,
          slots, keys, ent, rows, fill, start, end,
          fills, reads, updates, hops, words, steps, dims_tag, tensors_tag):
    """Counts of mappings start..end-1 of the batch (inputs [B, L, D_all] and [B, L, T]; outputs
    [L, T, B] and [B]). Returns the index of the first mapping not counted (``end`` when all are).
    The batch must be valid (costmodel.batch_check): the kernel does not check its indices.

    Tensors without a window axis take the classic reuse formula (:func:`_windowless`); the others
    walk each link's reusing loops, window tables and memoized merges (a
    merge at one level into the MACs in closed form: :func:`_one_level_halo`).

    The plan (costmodel.analysis._Plan.packed) is costmodel.tiles.PackedTables's arrays with
    ``flags`` [3, L] after ``idx``: the multicast / reduction networks that merge, and the levels
    with a fan-out (the others' spatial factors are 1 in a valid mapping and are not read).

    ``dims_tag`` / ``tensors_tag`` are tuples (:func:`shape_tags`) whose lengths are the dims the
    kernel loops over and the tensors: numba compiles one version per tuple length, in which they
    are constants, so LLVM unrolls the loops over dims and tensors and folds the strides of the
    scratch tables (measured: -10 % and -5 % of the kernel's time). Dims past the problem's active
    ones have factor 1 everywhere, so padding to a multiple of 8 changes no count and one
    version serves every problem of up to 8 active dims."""
    _, n_lv, d_all = tem.shape
    n_t = len(tensors_tag)
    d_real = idx.shape[0]
    d_n = len(dims_tag)
    max_k, max_terms = ax_coef.shape[1], ax_coef.shape[2]
    n_s = 3 * n_lv
    f = np.ones((n_s, d_n), np.int64)
    rk = np.full((n_lv, d_n), d_all, np.int64)
    suf = np.ones((n_s + 1, d_n), np.int64)
    xy = np.ones((n_lv, d_n), np.int64)
    lp = np.zeros((n_lv, d_n), np.int64)
    rsuf = np.zeros((n_lv + 1, d_n), np.int64)  # per dim: Σ over levels >= m of (f - 1) x place value
    tabove = np.ones((n_lv + 1, d_n), np.int64)  # products of the temporal factors above each level
    n_above = np.ones(n_lv + 1, np.int64)
    sp_above = np.ones(n_lv + 1, np.int64)
    last = np.zeros(n_lv, np.int64)
    js = np.zeros(n_lv, np.int64)
    trow = np.zeros((max_k, n_lv + 1), np.int64)
    multi = np.ones(n_lv + 1, np.int64)
    single = np.ones(n_lv + 1, np.int64)
    after = np.zeros(n_lv * d_n, np.int64)
    shift = np.zeros((max_k, n_lv * d_n), np.int64)
    n_masks = 1 << n_lv
    # per merged-network mask of the tensor at hand: merge factors per dim, their product, and
    # whether they split a window dim (see _merge_factors)
    m_f = np.ones((n_masks, d_n), np.int64)
    m_pm = np.ones(n_masks, np.int64)
    m_ust = np.ones(n_masks, np.int64)  # and the product of those of the tensor's single-term dims
    m_split = np.zeros(n_masks, np.bool_)
    m_stamp = np.full(n_masks, -1, np.int64)
    t_id = 0
    kp = np.zeros(n_lv, np.bool_)
    memo_v = np.zeros((2, n_masks), np.int64)  # per link and merged-network mask: entries, distinct
    stamp = np.full((2, n_masks), -1, np.int64)
    key = np.zeros(3 + max_terms * (2 + 2 * n_s), np.int64)
    mrow = np.zeros(max_k, np.int64)
    link_id = 0

    blk = 64
    # the block's counts [5, blk, L, T] (fills, reads, updates, hops, tile words), written out in
    # runs of the batch axis
    o = np.zeros((5, blk, n_lv, n_t), np.int64)
    # a memo table is full at mapping ``stop``: it finishes with stand-in entries and is not
    # written out; the caller grows the tables and resumes there. (One exit, after the loop:
    # each return inside it carries the release of every scratch array; about 2 % of the time.)
    stop = -1
    for b in range(start, end):
        j0 = (b - start) % blk
        if j0 == 0:
            if b > start:
                _flush(o, blk, b - blk, fills, reads, updates, hops, words)
            if b + 3 * blk <= end:  # the block after next
                prefetch_rows(tem, b + 2 * blk, blk)
                prefetch_rows(spx, b + 2 * blk, blk)
                prefetch_rows(spy, b + 2 * blk, blk)
                prefetch_rows(rank, b + 2 * blk, blk)
                prefetch_rows(keep, b + 2 * blk, blk)
        for i in range(4):
            for m in range(n_lv):
                for t in range(n_t):
                    o[i, j0, m, t] = 0
        # ---- geometry: slot factors f [3L, D] (slot 3m: level m's temporal loop, 3m+1 / 3m+2 its
        # X / Y), suffix products (slot s's place value is suf[s + 1]), loop positions in the
        # whole nest
        for m in range(n_lv - 1, -1, -1):  # (inner levels first: the suffix products)
            # (the padding dims past d_real keep factor 1 and rank d_all from the start)
            if flags[2, m]:
                for d in range(d_real):
                    di = idx[d]
                    f[3 * m + 1, d] = spx[b, m, di]
                    f[3 * m + 2, d] = spy[b, m, di]
                    xy[m, d] = f[3 * m + 1, d] * f[3 * m + 2, d]
                for d in range(d_n):
                    suf[3 * m + 2, d] = suf[3 * m + 3, d] * f[3 * m + 2, d]
                    suf[3 * m + 1, d] = suf[3 * m + 2, d] * f[3 * m + 1, d]
            else:
                for d in range(d_n):
                    suf[3 * m + 2, d] = suf[3 * m + 3, d]
                    suf[3 * m + 1, d] = suf[3 * m + 3, d]
            for d in range(d_real):
                di = idx[d]
                f[3 * m, d] = tem[b, m, di]
                rk[m, d] = rank[b, m, di]
            for d in range(d_n):
                # the loop's position in the nest, or -1 for a trivial loop: no branch (random
                # factors make one unpredictable; as one it cost about 10 % of the kernel's time)
                lp[m, d] = (rk[m, d] + m * d_all) | -np.int64(f[3 * m, d] < 2)
                suf[3 * m, d] = suf[3 * m + 1, d] * f[3 * m, d]
                rsuf[m, d] = rsuf[m + 1, d] + (f[3 * m, d] - 1) * suf[3 * m + 1, d]
        for m in range(n_lv):
            pt, ps = 1, 1
            for d in range(d_n):
                pt *= f[3 * m, d]
                ps *= xy[m, d]
                tabove[m + 1, d] = tabove[m, d] * f[3 * m, d]
            n_above[m + 1] = n_above[m] * pt
            sp_above[m + 1] = sp_above[m] * ps
            if timeloop:  # (only Timeloop's model reads it)
                lm = last[m - 1] if m else -1
                for d in range(d_n):
                    lm = max(lm, lp[m, d])
                last[m] = lm
        steps[b] = n_above[n_lv]
        for t in range(n_t):
            o[4, j0, 0, t] = tinfo[t, 1]

        for ti in range(n_t):
            t_id += 1
            is_out = tinfo[ti, 0] != 0
            st_n, free_n, n_mt = tinfo[ti, 2], tinfo[ti, 3], tinfo[ti, 4]
            excl_used = timeloop and tinfo[ti, 5] != 0
            n_kinds = 2 if is_out else 1
            for m in range(n_lv):
                kp[m] = m == 0 or keep[b, m, ti]
            if n_mt == 0:
                _windowless(ti, is_out, n_lv, kp, flags, tinfo, tdims, f, lp, xy, suf, tabove,
                            n_above, sp_above, o, j0, d_n, d_real)
                continue
            jm = -1
            for m in range(n_lv):
                for i in range(st_n):
                    jm = max(jm, lp[m, tdims[ti, 0, i]])
                js[m] = jm
            for c in range(1, n_lv + 1):  # tile sizes at the levels that keep the tensor, and the MACs
                if c < n_lv and not kp[c]:
                    o[4, j0, c, ti] = 0
                    continue
                multi[c], single[c] = _tile(ti, suf, 3 * c, c, tinfo, tdims, ax_n, ax_dim, tsize, tsize_off, lk,
                                            lk_off, radix, trow)
                if c < n_lv:
                    o[4, j0, c, ti] = multi[c] * single[c]
            parent = 0
            for c in range(1, n_lv + 1):
                if kp[c - 1]:
                    parent = c - 1
                mac = c == n_lv
                if not mac and not kp[c]:
                    continue
                link_id += 1
                # the loops whose advance can reuse the tile: those of a free dim with a factor
                # above 1, inner to the tile's last loop over a stationary dim (listed with their
                # steps and shifts)
                n_act = 0
                if not mac:
                    jc = js[c - 1]
                    for m in range(c):
                        for j in range(free_n):
                            fj = tdims[ti, 1, j]
                            if lp[m, fj] <= jc:
                                continue
                            still = True
                            for k in range(n_mt):
                                # the tile's shift when this loop advances: the axis's loops inner
                                # to it at its level wrap to 0, it moves, and so does the offset
                                # of the levels between
                                sh = 0
                                for term in range(ax_n[ti, k]):
                                    e, cf = ax_dim[ti, k, term], ax_coef[ti, k, term]
                                    if rk[m, e] > rk[m, fj]:
                                        sh -= cf * (f[3 * m, e] - 1) * suf[3 * m + 1, e]
                                    elif e == fj:
                                        sh += cf * suf[3 * m + 1, e]
                                    sh -= cf * (rsuf[m + 1, e] - rsuf[c, e])
                                shift[k, n_act] = sh
                                still = still and sh == 0
                            if timeloop and not still and lp[m, fj] != last[c - 1]:
                                continue
                            # the steps at which the loop advances: those of the loops outer to it
                            # (no branch: random loop orders would make one unpredictable)
                            a = n_above[m] * (f[3 * m, fj] - 1)
                            for d in range(d_n):
                                a *= f[3 * m, d] if rk[m, d] < rk[m, fj] else 1
                            after[n_act] = a
                            n_act += 1
                have_s0, s0 = False, 0
                mk0, mk1 = 0, 0  # merging networks among levels x..c-1: multicast, reduction
                dn, er = 0, 0
                for x in range(c, parent - 1, -1):
                    if x < c:
                        mk0, mk1 = mk0 | flags[0, x] << x, mk1 | flags[1, x] << x
                    # the counts change only where the merge sets do; 0: down the multicast
                    # networks, 1: up the reduction ones (outputs only)
                    for kind in range(n_kinds if x == c or flags[0, x] or flags[1, x] else 0):
                        mask = mk1 if kind else mk0
                        if mask and m_stamp[mask] != t_id:  # (the merge depends on the tensor and mask
                            # only; no network merges nothing: m_f[0] stays 1)
                            m_stamp[mask] = t_id
                            m_pm[mask], m_split[mask] = _merge_factors(mask, x, c, xy, excl_used, tdims, ti, m_f)
                            u = 1
                            for i in range(st_n):
                                u *= m_f[mask, tdims[ti, 0, i]]
                            m_ust[mask] = u
                        pm, split = m_pm[mask], m_split[mask]
                        if stamp[0, mask] != link_id:
                            stamp[0, mask] = link_id
                            # ---- entries: new elements of the merged children over the steps
                            u_st = single[c] * m_ust[mask]
                            u_mt = multi[c]
                            if split:
                                for k in range(n_mt):
                                    # an axis none of whose dims the merge splits keeps its
                                    # unmerged tables (mrow -1)
                                    mrow[k] = -1
                                    for term in range(ax_n[ti, k]):
                                        if m_f[mask, ax_dim[ti, k, term]] > 1:
                                            mrow[k] = 0
                                    if mrow[k] < 0:
                                        continue
                                    if mac and ax_n[ti, k] <= 2 and mask & (mask - 1) == 0:
                                        # one merged level at the MACs: no memo (see _one_level_halo)
                                        u_mt = u_mt // tsize[tsize_off[ti, k] + trow[k, c]] * _one_level_halo(
                                            ti, k, ax_n, ax_dim, ax_coef, suf, xy, mask)
                                        continue
                                    key[0], key[1], key[2] = MERGED, ti, k
                                    p = 3
                                    for term in range(ax_n[ti, k]):
                                        e = ax_dim[ti, k, term]
                                        p = _put_term(key, p, suf[3 * c, e], f, suf, e, 3 * x, 3 * c, mask, c, False)
                                    en = _memo(key, p, ax_n[ti, k], ax_coef[ti, k], ax_span[ti, k],
                                               slots, keys, ent, rows, fill)
                                    if en < 0:  # a table is full (see ``stop``): the unmerged tables
                                        stop, mrow[k] = b, -1  # stand in (no row that may be too short)
                                        continue
                                    mrow[k] = ent[en, 1]
                                    u_mt = u_mt // tsize[tsize_off[ti, k] + trow[k, c]] * ent[en, 0]
                            if mac:
                                val = sp_above[c] // pm * n_above[c] * u_st * u_mt
                            else:
                                if split or not have_s0:
                                    reuse = 0
                                    for i in range(n_act):
                                        a = after[i]
                                        for k in range(n_mt):
                                            span = ax_span[ti, k]
                                            sh = min(max(shift[k, i], -span), span) + span
                                            if split and mrow[k] >= 0:
                                                a *= rows[mrow[k] + sh]
                                            else:
                                                a *= tover[tover_off[ti, k] + trow[k, c] * (2 * span + 1) + sh]
                                        reuse += a
                                    if not split:
                                        have_s0, s0 = True, reuse
                                else:
                                    reuse = s0
                                val = sp_above[c] // pm * u_st * (n_above[c] * u_mt - reuse)
                            memo_v[0, mask] = val
                        v = memo_v[0, mask]
                        if kind == 0 and is_out:
                            # ---- distinct: elements each merged group ever holds (reads skipped
                            # as never written)
                            if stamp[1, mask] != link_id:
                                stamp[1, mask] = link_id
                                # per single-term dim: size // (spatial factors above c // merged ones)
                                # (the factors multiply to the size: products, not divisions)
                                dv = sp_above[c] // pm * m_ust[mask]
                                for i in range(st_n):
                                    e = tdims[ti, 0, i]
                                    dv *= tabove[c, e] * suf[3 * c, e]
                                dmask = 0 if timeloop else mask  # Timeloop's model: no merged digits in a group's set
                                for k in range(n_mt):
                                    key[0], key[1], key[2] = SUMSET, ti, k
                                    p = 3
                                    for term in range(ax_n[ti, k]):
                                        p = _put_term(key, p, 0, f, suf, ax_dim[ti, k, term], 0, n_s, dmask, c, True)
                                    en = _memo(key, p, ax_n[ti, k], ax_coef[ti, k], ax_span[ti, k],
                                               slots, keys, ent, rows, fill)
                                    if en < 0:  # a table is full (see ``stop``)
                                        stop, en = b, 0
                                    dv *= ent[en, 0]
                                memo_v[1, mask] = dv
                            v -= memo_v[1, mask]
                        if kind == 0:
                            dn = v
                        else:
                            er = v
                    _deposit(o, j0, ti, c, x, parent, mac, dn, er)
        if stop >= 0:
            break
    if stop >= 0:
        j0 = (stop - start) % blk
        _flush(o, j0, stop - j0, fills, reads, updates, hops, words)
        return stop
    if end > start:
        nb = (end - start - 1) % blk + 1
        _flush(o, nb, end - nb, fills, reads, updates, hops, words)
    return end


def shape_tags(n_dims: int, n_tensors: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """:func:`count`'s ``dims_tag`` and ``tensors_tag``: the active dims rounded up to a multiple of
    8 (one compiled version for most problems) and the tensors."""
    return (0,) * (8 * -(-n_dims // 8)), (0,) * n_tensors


_VECTORIZER = threading.Lock()


def count_batch(*args) -> int:
    """:func:`count` (same arguments), compiled on first use without LLVM's loop vectorizer.

    Why: with the dims a constant 8, the vectorizer turns the short loops over them into AVX2
    code (64-bit products emulated, runtime checks) that is slower than scalar code: the kernel
    took 5-7 % less time without it (the other kernels keep it; numba reads the setting when it
    compiles, so it is off only while this call may compile). The lock keeps concurrent callers
    from restoring each other's setting; the kernel holds the GIL, so it serializes nothing
    that could run in parallel."""
    with _VECTORIZER:
        old = numba_config.LOOP_VECTORIZE
        numba_config.LOOP_VECTORIZE = 0
        try:
            return count(*args)
        finally:
            numba_config.LOOP_VECTORIZE = old
