/* What Rust cannot take from mpi.h as it stands, the same for Open MPI
 * and MPICH: the constants that are macros, the Fortran handle
 * conversions (functions in Open MPI, macros in MPICH) and the Fortran
 * sentinels (Open MPI's common blocks, MPICH's pointers to its own). */
#include <stddef.h>
#include <mpi.h>

void *const autocoll_in_place = MPI_IN_PLACE;
void *const autocoll_bottom = MPI_BOTTOM;
const int autocoll_err_other = MPI_ERR_OTHER;
const int autocoll_err_arg = MPI_ERR_ARG;
const int autocoll_combiner_named = MPI_COMBINER_NAMED;
const int autocoll_keyval_invalid = MPI_KEYVAL_INVALID;
const MPI_Op autocoll_op_replace = MPI_REPLACE;
const MPI_Op autocoll_op_no_op = MPI_NO_OP;
const MPI_Op autocoll_op_null = MPI_OP_NULL;

/* MPI_COMM_NULL_COPY_FN is a macro too; attributes of the private
 * duplicates are not copied into duplicates of the program's communicator. */
int autocoll_create_keyval(MPI_Comm_delete_attr_function *del, int *keyval)
{
    return PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, del, keyval, NULL);
}

MPI_Comm autocoll_comm_f2c(MPI_Fint f) { return PMPI_Comm_f2c(f); }
MPI_Datatype autocoll_type_f2c(MPI_Fint f) { return PMPI_Type_f2c(f); }
MPI_Op autocoll_op_f2c(MPI_Fint f) { return PMPI_Op_f2c(f); }

/* The addresses Fortran passes for MPI_IN_PLACE and MPI_BOTTOM, or NULL
 * where the program has no Fortran (the symbols are weak: a C program
 * under MPICH does not load its Fortran library). */
#if defined(OPEN_MPI)
extern int mpi_fortran_in_place_ __attribute__((weak));
extern int mpi_fortran_bottom_ __attribute__((weak));
const void *autocoll_fortran_in_place(void) { return &mpi_fortran_in_place_; }
const void *autocoll_fortran_bottom(void) { return &mpi_fortran_bottom_; }
#elif defined(MPICH)
extern void *MPIR_F_MPI_IN_PLACE __attribute__((weak));
extern void *MPIR_F_MPI_BOTTOM __attribute__((weak));
const void *autocoll_fortran_in_place(void) { return &MPIR_F_MPI_IN_PLACE ? MPIR_F_MPI_IN_PLACE : NULL; }
const void *autocoll_fortran_bottom(void) { return &MPIR_F_MPI_BOTTOM ? MPIR_F_MPI_BOTTOM : NULL; }
#else
#error "autocoll-mpi builds against Open MPI or MPICH"
#endif
