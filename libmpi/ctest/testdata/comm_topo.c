/* comm_topo.c (np 4): a periodic 2x2 Cartesian grid with a halo exchange
 * along both dimensions (MPI_Cart_shift + MPI_Sendrecv), Cart_get/rank/
 * coords/sub, Dims_create; a graph topology; a distributed graph (a
 * directed ring, weighted) and its neighbour queries; Topo_test. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int dims[2] = {0, 0}, periods[2] = {1, 0};
    MPI_Dims_create(size, 2, dims);
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    int crank, coords[2], gd[2], gp[2], gc[2], nd;
    MPI_Comm_rank(cart, &crank);
    MPI_Cart_coords(cart, crank, 2, coords);
    MPI_Cart_get(cart, 2, gd, gp, gc);
    MPI_Cartdim_get(cart, &nd);
    int back;
    MPI_Cart_rank(cart, coords, &back);

    /* Halo exchange: send my rank up and down each dimension. */
    int halo[4];
    for (int d = 0; d < 2; d++) {
        int lo, hi;
        MPI_Cart_shift(cart, d, 1, &lo, &hi);
        halo[2 * d] = halo[2 * d + 1] = -9;
        MPI_Sendrecv(&crank, 1, MPI_INT, hi, d, &halo[2 * d], 1, MPI_INT, lo, d, cart, MPI_STATUS_IGNORE);
        MPI_Sendrecv(&crank, 1, MPI_INT, lo, 10 + d, &halo[2 * d + 1], 1, MPI_INT, hi, 10 + d, cart, MPI_STATUS_IGNORE);
    }
    int s1lo, s1hi;
    MPI_Cart_shift(cart, 1, 1, &s1lo, &s1hi);

    /* Rows (keep dimension 1). */
    MPI_Comm row;
    int remain[2] = {0, 1}, rrank, rsize;
    MPI_Cart_sub(cart, remain, &row);
    MPI_Comm_rank(row, &rrank);
    MPI_Comm_size(row, &rsize);

    /* A graph: a star around 0. */
    int index[4] = {3, 4, 5, 6}, edges[6] = {1, 2, 3, 0, 0, 0};
    MPI_Comm graph;
    MPI_Graph_create(MPI_COMM_WORLD, 4, index, edges, 0, &graph);
    int nn, ne, nb[4], nbc;
    MPI_Graphdims_get(graph, &nn, &ne);
    MPI_Graph_neighbors_count(graph, rank, &nbc);
    MPI_Graph_neighbors(graph, rank, 4, nb);

    /* A distributed graph: a directed ring, weighted by the source rank. */
    int src = (rank + size - 1) % size, dst = (rank + 1) % size;
    int sw = src, dw = rank;
    MPI_Comm ring;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &src, &sw, 1, &dst, &dw, MPI_INFO_NULL, 0, &ring);
    int indeg, outdeg, weighted, gs[1], gsw[1], gdst[1], gdw[1];
    MPI_Dist_graph_neighbors_count(ring, &indeg, &outdeg, &weighted);
    MPI_Dist_graph_neighbors(ring, 1, gs, gsw, 1, gdst, gdw);
    /* The same ring given by rank 0 alone, unweighted. */
    MPI_Comm ring2;
    int srcs[4], degs[4], dsts[4];
    for (int k = 0; k < size; k++)
        srcs[k] = k, degs[k] = 1, dsts[k] = (k + 1) % size;
    MPI_Dist_graph_create(MPI_COMM_WORLD, rank == 0 ? size : 0, srcs, degs, dsts, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &ring2);
    int i2, o2, w2, s2[1], d2[1];
    MPI_Dist_graph_neighbors_count(ring2, &i2, &o2, &w2);
    MPI_Dist_graph_neighbors(ring2, 1, s2, MPI_UNWEIGHTED, 1, d2, MPI_UNWEIGHTED);
    /* Neighbours pass their rank along the ring. */
    int got = -1;
    MPI_Sendrecv(&rank, 1, MPI_INT, d2[0], 7, &got, 1, MPI_INT, s2[0], 7, ring2, MPI_STATUS_IGNORE);

    int t1, t2, t3, t4, t5;
    MPI_Topo_test(cart, &t1);
    MPI_Topo_test(graph, &t2);
    MPI_Topo_test(ring, &t3);
    MPI_Topo_test(MPI_COMM_WORLD, &t4);
    MPI_Topo_test(row, &t5);
    int d3[3] = {0, 3, 0};
    MPI_Dims_create(24, 3, d3);
    int mapped;
    MPI_Cart_map(MPI_COMM_WORLD, 2, dims, periods, &mapped);

    printf("result: rank %d cart %d coords %d,%d dims %d,%d per %d,%d back %d nd %d halo %d %d %d %d shift1 %d %d "
           "row %d/%d graph %d %d %d nb %d ring %d %d %d %d:%d %d:%d ring2 %d %d %d %d %d got %d topo %d %d %d %d %d "
           "dims3 %d,%d,%d map %d\n",
           rank, crank, coords[0], coords[1], gd[0], gd[1], gp[0], gp[1], back, nd, halo[0], halo[1], halo[2], halo[3],
           s1lo == MPI_PROC_NULL ? -2 : s1lo, s1hi == MPI_PROC_NULL ? -2 : s1hi, rrank, rsize, nn, ne, nbc, nb[0],
           indeg, outdeg, weighted, gs[0], gsw[0], gdst[0], gdw[0], i2, o2, w2, s2[0], d2[0], got, t1 == MPI_CART,
           t2 == MPI_GRAPH, t3 == MPI_DIST_GRAPH, t4 == MPI_UNDEFINED, t5 == MPI_CART, d3[0], d3[1], d3[2], mapped);

    MPI_Comm_free(&ring2);
    MPI_Comm_free(&ring);
    MPI_Comm_free(&graph);
    MPI_Comm_free(&row);
    MPI_Comm_free(&cart);
    MPI_Finalize();
    return 0;
}
