/* comm_groups.c (np 4): groups (incl, excl, ranges, set operations,
 * compare, translate_ranks), communicators (split by colour and key, create,
 * create_group, dup, compare, names, free, split_type) and
 * intercommunicators (create, test_inter, remote size and group, merge).
 * Each rank prints one line of facts; rank 0 prints the group facts. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static const char *cmp(int r)
{
    switch (r) {
    case MPI_IDENT:
        return "ident";
    case MPI_CONGRUENT:
        return "congruent";
    case MPI_SIMILAR:
        return "similar";
    case MPI_UNEQUAL:
        return "unequal";
    }
    return "?";
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* Groups. */
    MPI_Group world, g31, gx0, gr, gu, gi, gd, grev, gw2;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Comm_group(MPI_COMM_WORLD, &gw2);
    int r31[2] = {3, 1}, r0[1] = {0}, rev[4] = {3, 2, 1, 0};
    int ranges[1][3] = {{0, 3, 2}};
    MPI_Group_incl(world, 2, r31, &g31);
    MPI_Group_excl(world, 1, r0, &gx0);
    MPI_Group_range_incl(world, 1, ranges, &gr);
    MPI_Group_union(g31, gr, &gu);
    MPI_Group_intersection(gx0, gr, &gi);
    MPI_Group_difference(world, g31, &gd);
    MPI_Group_incl(world, 4, rev, &grev);
    int s31, sx0, sr, su, si, sd, rk31, rkd;
    MPI_Group_size(g31, &s31);
    MPI_Group_size(gx0, &sx0);
    MPI_Group_size(gr, &sr);
    MPI_Group_size(gu, &su);
    MPI_Group_size(gi, &si);
    MPI_Group_size(gd, &sd);
    MPI_Group_rank(g31, &rk31);
    MPI_Group_rank(gd, &rkd);
    int c1, c2, c3;
    MPI_Group_compare(world, gw2, &c1);
    MPI_Group_compare(world, grev, &c2);
    MPI_Group_compare(world, g31, &c3);
    int in[4] = {0, 1, MPI_PROC_NULL, 0}, out[4];
    MPI_Group_translate_ranks(g31, 3, in, world, out);
    int in2[2] = {0, 3}, out2[2];
    MPI_Group_translate_ranks(world, 2, in2, g31, out2);
    int se;
    MPI_Group_size(MPI_GROUP_EMPTY, &se);
    MPI_Group ru;
    int ranges2[1][3] = {{3, 0, -3}};
    int sre;
    MPI_Group_range_excl(world, 1, ranges2, &ru);
    MPI_Group_size(ru, &sre);
    if (rank == 0) {
        printf("result: groups sizes %d %d %d %d %d %d empty %d rexcl %d\n", s31, sx0, sr, su, si, sd, se, sre);
        printf("result: groups cmp %s %s %s translate %d %d %d to31 %d %d\n", cmp(c1), cmp(c2), cmp(c3), out[0], out[1],
               out[2] == MPI_PROC_NULL ? -2 : out[2], out2[0] == MPI_UNDEFINED ? -1 : out2[0], out2[1]);
    }
    MPI_Group_free(&gw2);
    MPI_Group_free(&g31);
    MPI_Group_free(&gx0);
    MPI_Group_free(&gr);
    MPI_Group_free(&gu);
    MPI_Group_free(&gi);
    MPI_Group_free(&gd);
    MPI_Group_free(&ru);

    /* Split: colour rank%2, key -rank. */
    MPI_Comm split;
    int srank, ssize;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &split);
    MPI_Comm_rank(split, &srank);
    MPI_Comm_size(split, &ssize);
    MPI_Comm none;
    MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? 0 : MPI_UNDEFINED, 0, &none);
    int none_null = (rank == 0) ? (none != MPI_COMM_NULL) : (none == MPI_COMM_NULL);
    if (none != MPI_COMM_NULL)
        MPI_Comm_free(&none);

    /* Create from the reversed group; dup; compare. */
    MPI_Comm crev, dup;
    MPI_Comm_create(MPI_COMM_WORLD, grev, &crev);
    int revrank;
    MPI_Comm_rank(crev, &revrank);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int k1, k2, k3, k4;
    MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, &k1);
    MPI_Comm_compare(MPI_COMM_WORLD, dup, &k2);
    MPI_Comm_compare(MPI_COMM_WORLD, crev, &k3);
    MPI_Comm_compare(MPI_COMM_WORLD, split, &k4);

    /* create_group: the odd ranks only. */
    MPI_Group godd;
    int odd[2] = {1, 3};
    MPI_Group_incl(world, 2, odd, &godd);
    int cgsize = -1;
    if (rank % 2 == 1) {
        MPI_Comm cg;
        MPI_Comm_create_group(MPI_COMM_WORLD, godd, 5, &cg);
        MPI_Comm_size(cg, &cgsize);
        MPI_Comm_free(&cg);
    }
    MPI_Group_free(&godd);
    MPI_Group_free(&grev);

    /* The MPI-4 group constructors: the even and the odd ranks, and an
     * intercommunicator between them. */
    MPI_Group gev, god;
    int ev[2] = {0, 2}, od[2] = {1, 3};
    MPI_Group_incl(world, 2, ev, &gev);
    MPI_Group_incl(world, 2, od, &god);
    MPI_Comm fg, fi;
    MPI_Comm_create_from_group(rank % 2 ? god : gev, "halves", MPI_INFO_NULL, MPI_ERRORS_RETURN, &fg);
    int fgrank, fgsize, firsize, fgeh;
    MPI_Comm_rank(fg, &fgrank);
    MPI_Comm_size(fg, &fgsize);
    MPI_Errhandler eh;
    MPI_Comm_get_errhandler(fg, &eh);
    fgeh = eh == MPI_ERRORS_RETURN;
    MPI_Intercomm_create_from_groups(rank % 2 ? god : gev, 0, rank % 2 ? gev : god, 0, "pair", MPI_INFO_NULL,
                                     MPI_ERRHANDLER_NULL, &fi);
    MPI_Comm_remote_size(fi, &firsize);
    MPI_Comm_free(&fi);
    MPI_Comm_free(&fg);
    MPI_Group_free(&gev);
    MPI_Group_free(&god);

    /* Names. */
    char wn[MPI_MAX_OBJECT_NAME], dn[MPI_MAX_OBJECT_NAME], mn[MPI_MAX_OBJECT_NAME];
    int wl, dl, ml;
    MPI_Comm_get_name(MPI_COMM_WORLD, wn, &wl);
    MPI_Comm_get_name(dup, dn, &dl);
    MPI_Comm_set_name(dup, "my dup");
    MPI_Comm_get_name(dup, mn, &ml);

    /* idup: a request that completes; the communicator works. */
    MPI_Comm idp;
    MPI_Request req;
    int idsize = -1, reqnull;
    MPI_Comm_idup(MPI_COMM_WORLD, &idp, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    reqnull = req == MPI_REQUEST_NULL;
    MPI_Comm_size(idp, &idsize);
    MPI_Comm_free(&idp);

    /* Free. */
    MPI_Comm_free(&dup);
    int freed_null = dup == MPI_COMM_NULL;

    /* split_type shared: every rank runs on this host. */
    MPI_Comm node;
    int nsize;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &nsize);
    MPI_Comm_free(&node);

    /* Intercommunicator between the even and the odd ranks. */
    MPI_Comm inter, merged;
    MPI_Intercomm_create(split, 0, MPI_COMM_WORLD, rank % 2 == 0 ? 3 : 2, 9, &inter);
    int isinter, rsize, mrank, msize, rgsize, wflag;
    MPI_Comm_test_inter(inter, &isinter);
    MPI_Comm_test_inter(MPI_COMM_WORLD, &wflag);
    MPI_Comm_remote_size(inter, &rsize);
    MPI_Group rg;
    MPI_Comm_remote_group(inter, &rg);
    MPI_Group_size(rg, &rgsize);
    MPI_Group_free(&rg);
    MPI_Intercomm_merge(inter, rank % 2, &merged);
    MPI_Comm_rank(merged, &mrank);
    MPI_Comm_size(merged, &msize);
    /* A message over the intercommunicator: local rank 0 of each side to
     * the other's rank 0. */
    int v = -1;
    if (srank == 0) {
        int me = rank;
        MPI_Sendrecv(&me, 1, MPI_INT, 0, 1, &v, 1, MPI_INT, 0, 1, inter, MPI_STATUS_IGNORE);
    }

    printf("result: rank %d split %d/%d null-ok %d rev %d cmp %s %s %s %s cg %d names '%s' '%s' '%s' %d freed %d node %d "
           "inter %d %d remote %d %d merged %d/%d peer %d idup %d %d fromgroup %d/%d %d %d\n",
           rank, srank, ssize, none_null, revrank, cmp(k1), cmp(k2), cmp(k3), cmp(k4), cgsize, wn, dn, mn, ml, freed_null,
           nsize, isinter, wflag, rsize, rgsize, mrank, msize, v, idsize, reqnull, fgrank, fgsize, fgeh, firsize);

    MPI_Comm_free(&merged);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&crev);
    MPI_Comm_free(&split);
    MPI_Group_free(&world);
    MPI_Finalize();
    return 0;
}
