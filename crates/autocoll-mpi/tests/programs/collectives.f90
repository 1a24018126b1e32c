! The wrapped collectives from Fortran (`use mpi`), with in-place forms:
! each rank writes its results to DIR/rank-N.txt.
program collectives
  use mpi
  implicit none
  integer :: ierr, rank, nranks, i, u, root
  integer, parameter :: n = 1000
  integer :: a(n), b(n), big(n * 8)
  ! Scans shorter than 64 KiB go straight to MPI: these are longer.
  integer, parameter :: ns = 20000
  integer :: sa(ns), sb(ns)
  double precision :: x(n), y(n)
  integer, allocatable :: counts(:), displs(:), rcounts(:), rdispls(:)
  character(len=256) :: dir, path

  call mpi_init(ierr)
  call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
  call mpi_comm_size(MPI_COMM_WORLD, nranks, ierr)
  call get_command_argument(1, dir)
  write (path, '(a, "/rank-", i0, ".txt")') trim(dir), rank
  open (newunit=u, file=path, status='replace')
  root = nranks - 1

  a = [(rank * 100 + i, i = 1, n)]
  call mpi_bcast(a, n, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
  write (u, *) 'bcast', ierr, sum(a), a(1), a(n)

  a = [(rank * 3 + i, i = 1, n)]
  call mpi_reduce(a, b, n, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) write (u, *) 'reduce', ierr, sum(b), b(1), b(n)
  b = a
  if (rank == 0) then
    call mpi_reduce(MPI_IN_PLACE, b, n, MPI_INTEGER, MPI_MAX, 0, MPI_COMM_WORLD, ierr)
    write (u, *) 'reduce in place', ierr, sum(b)
  else
    call mpi_reduce(b, b, n, MPI_INTEGER, MPI_MAX, 0, MPI_COMM_WORLD, ierr)
  end if

  x = [(rank + i / 8.0d0, i = 1, n)]
  call mpi_allreduce(x, y, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  write (u, *) 'allreduce', ierr, sum(y), y(1), y(n)
  call mpi_allreduce(MPI_IN_PLACE, x, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  write (u, *) 'allreduce in place', ierr, sum(x)

  sa = [(rank * 13 + mod(i, 97), i = 1, ns)]
  call mpi_scan(sa, sb, ns, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  write (u, *) 'scan', ierr, sum(sb), sb(1), sb(ns)
  call mpi_scan(MPI_IN_PLACE, sa, ns, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  write (u, *) 'scan in place', ierr, sum(sa)
  sa = [(rank * 17 + mod(i, 89), i = 1, ns)]
  call mpi_exscan(sa, sb, ns, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank > 0) write (u, *) 'exscan', ierr, sum(sb), sb(1), sb(ns)
  call mpi_exscan(MPI_IN_PLACE, sa, ns, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank > 0) write (u, *) 'exscan in place', ierr, sum(sa)

  big = [(rank * 7 + i, i = 1, n * 8)]
  call mpi_scatter(big, 100, MPI_INTEGER, b, 100, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  write (u, *) 'scatter', ierr, sum(b(1:100))

  a = [(rank * 5 + i, i = 1, n)]
  call mpi_gather(a, 100, MPI_INTEGER, big, 100, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
  if (rank == root) write (u, *) 'gather', ierr, sum(big(1:100 * nranks))

  call mpi_allgather(a, 100, MPI_INTEGER, big, 100, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  write (u, *) 'allgather', ierr, sum(big(1:100 * nranks))
  big(rank * 100 + 1:rank * 100 + 100) = a(1:100) * 2
  call mpi_allgather(MPI_IN_PLACE, 100, MPI_INTEGER, big, 100, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  write (u, *) 'allgather in place', ierr, sum(big(1:100 * nranks))

  big = [(rank * 11 + i, i = 1, n * 8)]
  call mpi_alltoall(big, 100, MPI_INTEGER, a, 100, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  write (u, *) 'alltoall', ierr, sum(a(1:100 * nranks)), a(1), a(100 * nranks)
  call mpi_alltoall(MPI_IN_PLACE, 0, MPI_INTEGER, big, 100, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  write (u, *) 'alltoall in place', ierr, sum(big(1:100 * nranks)), big(1), big(100 * nranks)

  big = [(rank * 19 + mod(i, 83), i = 1, n * 8)]
  call mpi_reduce_scatter_block(big, a, 100, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  write (u, *) 'reduce_scatter_block', ierr, sum(a(1:100)), a(1), a(100)
  call mpi_reduce_scatter_block(MPI_IN_PLACE, big, 100, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  write (u, *) 'reduce_scatter_block in place', ierr, sum(big(1:100))
  allocate (counts(nranks))
  counts = 100
  big = [(rank * 23 + mod(i, 79), i = 1, n * 8)]
  call mpi_reduce_scatter(big, a, counts, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  write (u, *) 'reduce_scatter', ierr, sum(a(1:100)), a(1), a(100)
  call mpi_reduce_scatter(MPI_IN_PLACE, big, counts, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD, ierr)
  write (u, *) 'reduce_scatter in place', ierr, sum(big(1:100))

  ! The v-forms: rank i's block is 50 * i elements, blocks 3 apart.
  allocate (displs(nranks), rcounts(nranks), rdispls(nranks))
  counts = [(50 * i, i = 0, nranks - 1)]
  displs = [(50 * i * (i - 1) / 2 + 3 * i, i = 0, nranks - 1)]
  big = 0
  a = [(rank * 29 + i, i = 1, n)]
  call mpi_gatherv(a, counts(rank + 1), MPI_INTEGER, big, counts, displs, MPI_INTEGER, root, &
                   MPI_COMM_WORLD, ierr)
  if (rank == root) write (u, *) 'gatherv', ierr, sum(big), big(displs(nranks) + 1)
  big = [(rank * 31 + i, i = 1, n * 8)]
  b = 0
  call mpi_scatterv(big, counts, displs, MPI_INTEGER, b, counts(rank + 1), MPI_INTEGER, 0, &
                    MPI_COMM_WORLD, ierr)
  write (u, *) 'scatterv', ierr, sum(b)
  big = 0
  big(displs(rank + 1) + 1:displs(rank + 1) + counts(rank + 1)) = a(1:counts(rank + 1))
  call mpi_allgatherv(MPI_IN_PLACE, 0, MPI_INTEGER, big, counts, displs, MPI_INTEGER, &
                      MPI_COMM_WORLD, ierr)
  write (u, *) 'allgatherv in place', ierr, sum(big)
  ! Alltoallv: rank i sends rank j 10 * (i + j) elements, blocks 2 apart.
  counts = [(10 * (rank + i), i = 0, nranks - 1)]
  rcounts = counts
  displs = [(10 * (rank * i + i * (i - 1) / 2) + 2 * i, i = 0, nranks - 1)]
  rdispls = displs
  big = [(rank * 37 + i, i = 1, n * 8)]
  a = 0
  call mpi_alltoallv(big, counts, displs, MPI_INTEGER, a, rcounts, rdispls, MPI_INTEGER, &
                     MPI_COMM_WORLD, ierr)
  write (u, *) 'alltoallv', ierr, sum(a)

  call mpi_barrier(MPI_COMM_WORLD, ierr)
  write (u, *) 'barrier', ierr
  close (u)
  call mpi_finalize(ierr)
end program collectives
