/* Compiled with -DFTMPI_STRICT_ABI: mpi.h leaves out its extensions to
 * the standard ABI's names (MPI_LB, MPI_UB). */
#include <mpi.h>
#if defined(MPI_LB) || defined(MPI_UB)
#error "FTMPI_STRICT_ABI: MPI_LB and MPI_UB are defined"
#endif
int main(void)
{
    return 0;
}
