/* MPI's struct rule with C's alignments: the extent of a struct datatype
 * is the C struct's size (MPICH datatype/dataalign2, pairtype_size_extent). */
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <complex.h>

struct cc { char c; float _Complex z; };
struct ldi { long double x; int i; };

static MPI_Aint extent_of(int n, const int *bl, const MPI_Aint *disp, const MPI_Datatype *t)
{
    MPI_Datatype s;
    MPI_Aint lb, ext;
    MPI_Type_create_struct(n, bl, disp, t, &s);
    MPI_Type_get_extent(s, &lb, &ext);
    MPI_Type_free(&s);
    return ext;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int bl[2] = {1, 1};
    MPI_Aint d1[2] = {offsetof(struct cc, c), offsetof(struct cc, z)};
    MPI_Datatype t1[2] = {MPI_CHAR, MPI_C_FLOAT_COMPLEX};
    MPI_Aint d2[2] = {offsetof(struct ldi, x), offsetof(struct ldi, i)};
    MPI_Datatype t2[2] = {MPI_LONG_DOUBLE, MPI_INT};
    MPI_Aint lb, pair;
    MPI_Type_get_extent(MPI_LONG_DOUBLE_INT, &lb, &pair);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        printf("result: char+fcomplex %d of %d, ldouble+int %d of %d, LONG_DOUBLE_INT %d\n",
               (int)extent_of(2, bl, d1, t1), (int)sizeof(struct cc), (int)extent_of(2, bl, d2, t2),
               (int)sizeof(struct ldi), (int)pair);
    MPI_Finalize();
    return 0;
}
