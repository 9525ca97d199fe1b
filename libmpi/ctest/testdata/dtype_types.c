/* dtype_types.c (np 2): derived datatypes between two ranks: a C struct
 * with padding (MPI_Type_create_struct from MPI_Get_address, resized to
 * sizeof), absolute addresses with MPI_BOTTOM, a matrix column (vector),
 * a subarray, darray against subarray, pack/unpack through MPI_PACKED,
 * and the queries (size, extents, envelope and contents, names). Rank 1
 * prints what it received. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int tcopies, tdeletes, tlast;

static int tcopy(MPI_Datatype t, int key, void *extra, void *in, void *out, int *flag)
{
    (void)t, (void)key, (void)extra;
    tcopies++;
    *(void **)out = (void *)((intptr_t)in * 2);
    *flag = 1;
    return MPI_SUCCESS;
}

static int tdelete(MPI_Datatype t, int key, void *val, void *extra)
{
    (void)t, (void)key, (void)extra;
    tdeletes++;
    tlast = (int)(intptr_t)val;
    return MPI_SUCCESS;
}

struct rec {
    char c;
    double d;
    int i[3];
    short s;
};

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    /* 1. A struct with padding, two elements. */
    struct rec r[2];
    MPI_Aint base, disp[4];
    MPI_Get_address(&r[0], &base);
    MPI_Get_address(&r[0].c, &disp[0]);
    MPI_Get_address(&r[0].d, &disp[1]);
    MPI_Get_address(&r[0].i, &disp[2]);
    MPI_Get_address(&r[0].s, &disp[3]);
    for (int k = 0; k < 4; k++)
        disp[k] = MPI_Aint_diff(disp[k], base);
    int bl[4] = {1, 1, 3, 1};
    MPI_Datatype tt[4] = {MPI_CHAR, MPI_DOUBLE, MPI_INT, MPI_SHORT};
    MPI_Datatype st, rt;
    MPI_Type_create_struct(4, bl, disp, tt, &st);
    MPI_Type_create_resized(st, 0, sizeof(struct rec), &rt);
    MPI_Type_commit(&rt);
    int ssize;
    MPI_Aint slb, sext, tlb, text;
    MPI_Type_size(rt, &ssize);
    MPI_Type_get_extent(rt, &slb, &sext);
    MPI_Type_get_true_extent(st, &tlb, &text);
    memset(r, 0x55, sizeof r);
    if (rank == 0) {
        for (int k = 0; k < 2; k++) {
            r[k].c = (char)('a' + k);
            r[k].d = 1.5 + k;
            r[k].i[0] = 10 * k + 1, r[k].i[1] = 10 * k + 2, r[k].i[2] = 10 * k + 3;
            r[k].s = (short)(-7 - k);
        }
        MPI_Send(r, 2, rt, 1, 1, MPI_COMM_WORLD);
    } else {
        MPI_Status stt;
        int cnt, elems;
        MPI_Recv(r, 2, rt, 0, 1, MPI_COMM_WORLD, &stt);
        MPI_Get_count(&stt, rt, &cnt);
        MPI_Get_elements(&stt, rt, &elems);
        unsigned char *p = (unsigned char *)&r[0];
        int pad = p[1] == 0x55; /* the padding after c was not written */
        printf("result: struct %c %.1f %d %d %d %d | %c %.1f %d %d %d %d pad %d size %d extent %d/%d true %d/%d count %d elems %d\n",
               r[0].c, r[0].d, r[0].i[0], r[0].i[1], r[0].i[2], r[0].s, r[1].c, r[1].d, r[1].i[0], r[1].i[1],
               r[1].i[2], r[1].s, pad, ssize, (int)slb, (int)sext == (int)sizeof(struct rec), (int)tlb,
               (int)text == (int)(disp[3] + sizeof(short)), cnt, elems);
    }

    /* 2. Absolute addresses: two separate variables sent from MPI_BOTTOM. */
    int a = 0;
    double b[2] = {0, 0};
    MPI_Aint ad[2];
    MPI_Get_address(&a, &ad[0]);
    MPI_Get_address(b, &ad[1]);
    int bl2[2] = {1, 2};
    MPI_Datatype tt2[2] = {MPI_INT, MPI_DOUBLE}, abs;
    MPI_Type_create_struct(2, bl2, ad, tt2, &abs);
    MPI_Type_commit(&abs);
    if (rank == 0) {
        a = 42, b[0] = 2.25, b[1] = -4.5;
        MPI_Send(MPI_BOTTOM, 1, abs, 1, 2, MPI_COMM_WORLD);
    } else {
        MPI_Recv(MPI_BOTTOM, 1, abs, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("result: bottom %d %.2f %.2f\n", a, b[0], b[1]);
    }

    /* 3. A column of a 4x5 matrix, received contiguous and back into a
     * column of another matrix. */
    int m[4][5], col[4];
    MPI_Datatype column;
    MPI_Type_vector(4, 1, 5, MPI_INT, &column);
    MPI_Type_commit(&column);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 5; j++)
            m[i][j] = rank == 0 ? 10 * i + j : -1;
    if (rank == 0) {
        MPI_Send(&m[0][2], 1, column, 1, 3, MPI_COMM_WORLD);
        MPI_Send(&m[0][3], 1, column, 1, 4, MPI_COMM_WORLD);
    } else {
        MPI_Recv(col, 4, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(&m[0][1], 1, column, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("result: column %d %d %d %d into %d %d %d %d untouched %d %d\n", col[0], col[1], col[2], col[3], m[0][1],
               m[1][1], m[2][1], m[3][1], m[0][0], m[3][4]);
    }

    /* 4. A subarray of a 4x6 array, received into the same subarray. */
    int g[4][6];
    int sizes[2] = {4, 6}, subs[2] = {2, 3}, starts[2] = {1, 2};
    MPI_Datatype sub;
    MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &sub);
    MPI_Type_commit(&sub);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 6; j++)
            g[i][j] = rank == 0 ? 6 * i + j : 0;
    if (rank == 0) {
        MPI_Send(g, 1, sub, 1, 5, MPI_COMM_WORLD);
    } else {
        MPI_Recv(g, 1, sub, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        int sum = 0, nz = 0;
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 6; j++)
                if (g[i][j])
                    sum += g[i][j], nz++;
        MPI_Aint lb, ext;
        MPI_Type_get_extent(sub, &lb, &ext);
        printf("result: subarray %d %d %d %d %d %d nonzero %d sum %d extent %d/%d\n", g[1][2], g[1][3], g[1][4], g[2][2],
               g[2][3], g[2][4], nz, sum, (int)lb, (int)ext);
    }

    /* 5. darray (block x block, rank 3 of a 2x2 grid) packs as the
     * subarray starting at (2, 3). */
    int gs[2] = {4, 6}, ds[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_BLOCK};
    int da[2] = {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG}, ps[2] = {2, 2};
    int st2[2] = {2, 3};
    MPI_Datatype dar, sub2;
    MPI_Type_create_darray(4, 3, 2, gs, ds, da, ps, MPI_ORDER_C, MPI_INT, &dar);
    MPI_Type_create_subarray(2, sizes, subs, st2, MPI_ORDER_C, MPI_INT, &sub2);
    MPI_Type_commit(&dar);
    MPI_Type_commit(&sub2);
    int src[24];
    for (int k = 0; k < 24; k++)
        src[k] = k;
    char p1[64], p2[64];
    int pos1 = 0, pos2 = 0;
    MPI_Pack(src, 1, dar, p1, sizeof p1, &pos1, MPI_COMM_WORLD);
    MPI_Pack(src, 1, sub2, p2, sizeof p2, &pos2, MPI_COMM_WORLD);
    int same = pos1 == pos2 && memcmp(p1, p2, pos1) == 0;
    int *pv = (int *)p1;

    /* 6. Pack an int, a column and a double; send as MPI_PACKED. */
    char buf[256];
    int pos = 0, psz1, psz2;
    MPI_Pack_size(1, column, MPI_COMM_WORLD, &psz1);
    MPI_Pack_size(2, MPI_DOUBLE, MPI_COMM_WORLD, &psz2);
    if (rank == 0) {
        int n = 7;
        double x = 3.75;
        MPI_Pack(&n, 1, MPI_INT, buf, sizeof buf, &pos, MPI_COMM_WORLD);
        MPI_Pack(&m[0][4], 1, column, buf, sizeof buf, &pos, MPI_COMM_WORLD);
        MPI_Pack(&x, 1, MPI_DOUBLE, buf, sizeof buf, &pos, MPI_COMM_WORLD);
        MPI_Send(buf, pos, MPI_PACKED, 1, 6, MPI_COMM_WORLD);
    } else {
        int n, c4[4];
        double x;
        MPI_Status stt;
        int got;
        MPI_Recv(buf, sizeof buf, MPI_PACKED, 0, 6, MPI_COMM_WORLD, &stt);
        MPI_Get_count(&stt, MPI_PACKED, &got);
        MPI_Unpack(buf, got, &pos, &n, 1, MPI_INT, MPI_COMM_WORLD);
        MPI_Unpack(buf, got, &pos, c4, 4, MPI_INT, MPI_COMM_WORLD);
        MPI_Unpack(buf, got, &pos, &x, 1, MPI_DOUBLE, MPI_COMM_WORLD);
        printf("result: pack %d %d %d %d %d %.2f bytes %d pos %d sizes %d %d darray-same %d %d..%d\n", n, c4[0], c4[1], c4[2],
               c4[3], x, got, pos, psz1, psz2, same, pv[0], pv[5]);
    }

    /* 7. Queries: envelope and contents, names, dup, MPI-1 bounds. */
    int ni, na, nt, comb;
    MPI_Type_get_envelope(column, &ni, &na, &nt, &comb);
    int ints[3];
    MPI_Aint addrs[1];
    MPI_Datatype dts[1];
    MPI_Type_get_contents(column, 3, 0, 1, ints, addrs, dts);
    int pi, pa, pt, pc;
    MPI_Type_get_envelope(MPI_INT, &pi, &pa, &pt, &pc);
    char name[MPI_MAX_OBJECT_NAME], dname[MPI_MAX_OBJECT_NAME];
    int len, dlen;
    MPI_Type_get_name(MPI_DOUBLE, name, &len);
    MPI_Datatype dupc;
    MPI_Type_set_name(column, "column");
    MPI_Type_dup(column, &dupc);
    MPI_Type_get_name(dupc, dname, &dlen);
    MPI_Aint lb1, ub1, ex1;
    MPI_Type_lb(column, &lb1);
    MPI_Type_ub(column, &ub1);
    MPI_Type_extent(column, &ex1);
    MPI_Type_free(&dupc);
    int freed = dupc == MPI_DATATYPE_NULL;
    MPI_Datatype ind, hv;
    int ibl[2] = {2, 1}, idp[2] = {3, 0};
    MPI_Type_indexed(2, ibl, idp, MPI_INT, &ind);
    MPI_Type_create_hvector(2, 1, 12, MPI_INT, &hv);
    MPI_Aint ilb, iext, hlb, hext;
    MPI_Type_get_extent(ind, &ilb, &iext);
    MPI_Type_get_extent(hv, &hlb, &hext);
    if (rank == 1)
        printf("result: envelope %d %d %d vector %d contents %d %d %d int %d named %d %d %d %d name %s dup %s %d "
               "bounds %d %d %d freed %d indexed %d %d hvector %d %d\n",
               ni, na, nt, comb == MPI_COMBINER_VECTOR, ints[0], ints[1], ints[2], dts[0] == MPI_INT, pi, pa, pt,
               pc == MPI_COMBINER_NAMED, name, dname, dlen, (int)lb1, (int)ub1, (int)ex1, freed, (int)ilb, (int)iext,
               (int)hlb, (int)hext);

    /* 8. external32: big-endian, and back. */
    int ev[2] = {0x01020304, -2}, eb[2] = {0, 0};
    unsigned char ext[16];
    MPI_Aint epos = 0, esz, upos = 0;
    MPI_Pack_external_size("external32", 2, MPI_INT, &esz);
    MPI_Pack_external("external32", ev, 2, MPI_INT, ext, sizeof ext, &epos);
    MPI_Unpack_external("external32", ext, epos, &upos, eb, 2, MPI_INT);
    if (rank == 1)
        printf("result: external %d %d bytes %02x%02x%02x%02x %02x%02x%02x%02x back %#x %d pos %d\n", (int)esz, (int)epos,
               ext[0], ext[1], ext[2], ext[3], ext[4], ext[5], ext[6], ext[7], (unsigned)eb[0], eb[1], (int)upos);

    /* 9. Datatype attributes: copied by dup, deleted by free. */
    int tkey, tf, tf2;
    void *tv;
    MPI_Type_create_keyval(tcopy, tdelete, &tkey, NULL);
    MPI_Type_set_attr(ind, tkey, (void *)(intptr_t)21);
    MPI_Datatype indd;
    MPI_Type_dup(ind, &indd);
    MPI_Type_get_attr(indd, tkey, &tv, &tf);
    int tdup = tf ? (int)(intptr_t)tv : -1;
    MPI_Type_free(&indd);
    int tdel1 = tdeletes, tlast1 = tlast;
    MPI_Type_delete_attr(ind, tkey);
    MPI_Type_get_attr(ind, tkey, &tv, &tf2);
    MPI_Type_free_keyval(&tkey);
    if (rank == 1)
        printf("result: type attrs copies %d dup %d free %d:%d deleted %d:%d gone %d\n", tcopies, tdup, tdel1, tlast1,
               tdeletes, tlast, !tf2);

    /* 10. Large-count forms. */
    MPI_Datatype colc;
    MPI_Count csz, clb, cext, cpos = 0, cpsz;
    MPI_Type_vector_c(4, 1, 5, MPI_INT, &colc);
    MPI_Type_commit(&colc);
    MPI_Type_size_c(colc, &csz);
    MPI_Type_get_extent_c(colc, &clb, &cext);
    MPI_Pack_size_c(1, colc, MPI_COMM_WORLD, &cpsz);
    int cbuf[4];
    MPI_Pack_c(&m[0][1], 1, colc, cbuf, sizeof cbuf, &cpos, MPI_COMM_WORLD);
    if (rank == 1)
        printf("result: large size %d extent %d/%d pack %d %d..%d\n", (int)csz, (int)clb, (int)cext, (int)cpos, cbuf[0], cbuf[3]);
    MPI_Type_free(&colc);

    MPI_Type_free(&ind);
    MPI_Type_free(&hv);
    MPI_Type_free(&dar);
    MPI_Type_free(&sub2);
    MPI_Type_free(&sub);
    MPI_Type_free(&column);
    MPI_Type_free(&abs);
    MPI_Type_free(&rt);
    MPI_Type_free(&st);
    MPI_Finalize();
    return 0;
}
